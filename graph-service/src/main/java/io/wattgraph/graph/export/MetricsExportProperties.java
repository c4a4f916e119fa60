package io.wattgraph.graph.export;

import java.time.Duration;
import java.util.Locale;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The graph's measurements as metrics ({@code wattgraph.metrics.export.*}; docs/metrics.md lists every series).
 *
 * @param enabled read the graph every {@code refresh} and serve it as meters (Prometheus, OTLP when on)
 * @param refresh how often the snapshot is read from Neo4j; scrapes in between read the snapshot, never Neo4j
 * @param staleAfter an entity whose latest window ended longer ago (an edge last seen longer ago) is not exported
 * @param edgeLevel workload identity of an edge's ends: {@code service} (else pod) or {@code pod}
 * @param maxHosts hosts exported at most (the rest counted in {@code wattgraph_export_omitted_total})
 * @param maxNamespaces namespaces exported at most
 * @param maxContainers containers exported at most, the highest power (then CPU) first
 * @param maxEdges workload-to-workload edges exported at most, the most bytes first
 * @param histograms export the latency histograms (26 series per container, namespace and edge that served a
 *                   request; most of the series at scale: docs/benchmarks/metrics-export.md)
 */
@ConfigurationProperties("wattgraph.metrics.export")
public record MetricsExportProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("15s") Duration refresh,
        @DefaultValue("5m") Duration staleAfter,
        @DefaultValue("service") String edgeLevel,
        @DefaultValue("2000") int maxHosts,
        @DefaultValue("1000") int maxNamespaces,
        @DefaultValue("20000") int maxContainers,
        @DefaultValue("5000") int maxEdges,
        @DefaultValue("true") boolean histograms) {

    public MetricsExportProperties {
        if (refresh.isNegative() || refresh.isZero()) {
            throw new IllegalArgumentException("wattgraph.metrics.export.refresh must be positive: " + refresh);
        }
        if (staleAfter.isNegative() || staleAfter.isZero()) {
            throw new IllegalArgumentException("wattgraph.metrics.export.stale-after must be positive: " + staleAfter);
        }
        edgeLevel = edgeLevel.trim().toLowerCase(Locale.ROOT);
        if (!edgeLevel.equals("service") && !edgeLevel.equals("pod")) {
            throw new IllegalArgumentException("wattgraph.metrics.export.edge-level must be service or pod: " + edgeLevel);
        }
        check("max-hosts", maxHosts);
        check("max-namespaces", maxNamespaces);
        check("max-containers", maxContainers);
        check("max-edges", maxEdges);
    }

    private static void check(String name, int value) {
        if (value < 0) {
            throw new IllegalArgumentException("wattgraph.metrics.export." + name + " must not be negative: " + value);
        }
    }

    /** The cap of {@code kind}. */
    int max(ExportKind kind) {
        return switch (kind) {
            case HOST -> maxHosts;
            case NAMESPACE -> maxNamespaces;
            case CONTAINER -> maxContainers;
            case EDGE -> maxEdges;
        };
    }
}
