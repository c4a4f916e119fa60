package io.wattgraph.graph.export;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Keeps the registry's meters equal to a {@link Snapshot}: one meter per entity and series with a value, reading the
 * entity's latest values, so a scrape (or an OTLP push) reads memory and never Neo4j. A refresh swaps the values in
 * place, registers the series that appeared and removes those that went away. Not thread-safe: one refresh at a
 * time.
 */
final class ExportedMeters {

    /** One exported entity: its meters (null where the series has no value) and their values. */
    private static final class Entity {
        final ExportKind kind;
        final Tags tags;
        final Meter[] meters;
        volatile double[] values;

        Entity(ExportKind kind, Tags tags) {
            this.kind = kind;
            this.tags = tags;
            this.meters = new Meter[kind.series().size()];
        }

        double value(int i) {
            return values[i];
        }
    }

    private final MeterRegistry registry;
    private Map<String, Entity> entities = new HashMap<>();
    private final Map<ExportKind, Integer> series = new EnumMap<>(ExportKind.class);

    ExportedMeters(MeterRegistry registry) {
        this.registry = registry;
        for (ExportKind kind : ExportKind.values()) {
            series.put(kind, 0);
        }
    }

    /** Makes the meters those of {@code snapshot}. */
    void apply(Snapshot snapshot) {
        Map<String, Entity> next = new HashMap<>();
        Map<ExportKind, Integer> counts = new EnumMap<>(ExportKind.class);
        for (ExportKind kind : ExportKind.values()) {
            int count = 0;
            for (Snapshot.Item item : snapshot.of(kind)) {
                Entity e = entities.remove(item.key());
                if (e != null && !e.tags.equals(item.tags())) {
                    removeAll(e); // the entity's identity changed (e.g. its pod name became known)
                    e = null;
                }
                if (e == null) {
                    e = new Entity(kind, item.tags());
                }
                e.values = item.values();
                List<ExportKind.Series> defs = kind.series();
                for (int i = 0; i < defs.size(); i++) {
                    boolean present = !Double.isNaN(item.values()[i]);
                    if (present && e.meters[i] == null) {
                        e.meters[i] = register(e, i, defs.get(i));
                    } else if (!present && e.meters[i] != null) {
                        registry.remove(e.meters[i]);
                        e.meters[i] = null;
                    }
                    count += present ? 1 : 0;
                }
                for (ExportedHistogram h : item.histograms()) {
                    count += h == null ? 0 : ExportedHistogram.SERIES; // served by PrometheusHistograms, OtlpHistograms
                }
                next.put(item.key(), e);
            }
            counts.put(kind, count);
        }
        entities.values().forEach(this::removeAll); // not in the snapshot: gone, stale or over the cap
        entities = next;
        series.putAll(counts);
    }

    /** Removes every exported meter (the graph could not be read for longer than stale-after). */
    void clear() {
        entities.values().forEach(this::removeAll);
        entities = new HashMap<>();
        series.replaceAll((k, v) -> 0);
    }

    /** Series exported now, per kind (with the latency histograms' buckets, sum and count). */
    int series(ExportKind kind) {
        return series.get(kind);
    }

    private Meter register(Entity e, int i, ExportKind.Series def) {
        Tags tags = e.tags.and(def.extra());
        if (def.counter()) {
            return FunctionCounter.builder(def.name(), e, x -> x.value(i)).baseUnit(def.unit())
                    .description(def.description()).tags(tags).register(registry);
        }
        return Gauge.builder(def.name(), e, x -> x.value(i)).strongReference(true).baseUnit(def.unit())
                .description(def.description()).tags(tags).register(registry);
    }

    private void removeAll(Entity e) {
        for (int i = 0; i < e.meters.length; i++) {
            if (e.meters[i] != null) {
                registry.remove(e.meters[i]);
                e.meters[i] = null;
            }
        }
    }
}
