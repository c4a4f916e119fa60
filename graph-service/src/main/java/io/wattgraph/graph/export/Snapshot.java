package io.wattgraph.graph.export;

import io.micrometer.core.instrument.Tags;
import java.util.List;
import java.util.Map;

/**
 * What one refresh read from the graph, ready to serve: per kind the exported entities (at most the kind's cap) and
 * how many were left out by the cap.
 *
 * @param readStartNs wall clock (Unix ns) at which the read started
 */
public record Snapshot(Map<ExportKind, List<Item>> items, Map<ExportKind, Integer> omitted, long readStartNs) {

    /**
     * One entity: its identity, its tags ({@link ExportKind#tagKeys()} in order) and one value per
     * {@link ExportKind#series()}, NaN where the graph has none (no series then), and one histogram per
     * {@link ExportKind#histograms()}, null where there is none.
     */
    public record Item(String key, Tags tags, double[] values, ExportedHistogram[] histograms) {

        public Item(String key, Tags tags, double[] values) {
            this(key, tags, values, new ExportedHistogram[0]);
        }
    }

    public List<Item> of(ExportKind kind) {
        return items.getOrDefault(kind, List.of());
    }
}
