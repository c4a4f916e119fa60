package io.wattgraph.graph.export;

import static io.wattgraph.graph.export.ExportKind.BYTES_REQUEST;
import static io.wattgraph.graph.export.ExportKind.BYTES_RESPONSE;
import static io.wattgraph.graph.export.ExportKind.CPU;
import static io.wattgraph.graph.export.ExportKind.ENERGY;
import static io.wattgraph.graph.export.ExportKind.POWER;

import io.micrometer.core.instrument.Tags;
import io.wattgraph.graph.analysis.Aggregator;
import io.wattgraph.graph.export.GraphMetricsReader.EntityRow;
import io.wattgraph.graph.export.GraphMetricsReader.Rows;
import io.wattgraph.graph.export.Snapshot.Item;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns what {@link GraphMetricsReader} read into a {@link Snapshot}: one item per entity with its tags and values,
 * edges merged to workload pairs, each kind cut to its cap (the heaviest kept: power then CPU, edges by bytes).
 */
final class SnapshotBuilder {

    private SnapshotBuilder() {
    }

    static Snapshot build(Rows rows, long readStartNs, long sinceNs, MetricsExportProperties properties,
                          Counters counters) {
        Map<ExportKind, List<Item>> all = new EnumMap<>(ExportKind.class);
        List<Item> hosts = new ArrayList<>();
        for (EntityRow h : rows.hosts()) {
            boolean fresh = h.windowEndNs() != null && h.windowEndNs() >= sinceNs;
            double[] v = new double[ExportKind.HOST.series().size()];
            v[ENERGY] = fresh ? counters.energy("host:" + h.id(), h) : Double.NaN;
            v[POWER] = fresh ? value(h.metrics().powerW()) : Double.NaN;
            v[CPU] = fresh ? value(h.metrics().cpuUsage()) : Double.NaN;
            v[ExportKind.HOST_IDLE] = fresh ? value(h.idlePowerW()) : Double.NaN;
            v[ExportKind.HOST_WINDOW_END] = h.windowEndNs() == null ? Double.NaN : h.windowEndNs() / 1e9;
            hosts.add(new Item("host:" + h.id(), Tags.of("host", label(h.id())), v));
        }
        all.put(ExportKind.HOST, hosts);
        all.put(ExportKind.NAMESPACE, rows.namespaces().stream().map(n -> workload(ExportKind.NAMESPACE,
                "namespace:" + n.id(), Tags.of("namespace", label(n.id())), n, counters)).toList());
        all.put(ExportKind.CONTAINER, rows.containers().stream().map(c -> container(c, counters)).toList());
        all.put(ExportKind.EDGE, edges(rows, properties.edgeLevel().equals("service"), counters));
        if (!properties.histograms()) {
            all.replaceAll((kind, items) -> items.stream().map(i -> new Item(i.key(), i.tags(), i.values())).toList());
        }

        Map<ExportKind, List<Item>> kept = new EnumMap<>(ExportKind.class);
        Map<ExportKind, Integer> omitted = new EnumMap<>(ExportKind.class);
        all.forEach((kind, items) -> {
            List<Item> sorted = new ArrayList<>(items);
            sorted.sort(kind == ExportKind.EDGE ? BY_BYTES : BY_POWER);
            int max = properties.max(kind);
            kept.put(kind, List.copyOf(sorted.subList(0, Math.min(max, sorted.size()))));
            omitted.put(kind, Math.max(0, sorted.size() - max));
        });
        return new Snapshot(kept, omitted, readStartNs);
    }

    private static final Comparator<Item> BY_POWER = Comparator
            .comparingDouble((Item i) -> -orLowest(i.values()[POWER]))
            .thenComparingDouble(i -> -orLowest(i.values()[CPU]))
            .thenComparing(Item::key);

    private static final Comparator<Item> BY_BYTES = Comparator
            .comparingDouble((Item i) -> -(i.values()[BYTES_REQUEST] + i.values()[BYTES_RESPONSE]))
            .thenComparing(Item::key);

    private static double orLowest(double v) {
        return Double.isNaN(v) ? Double.NEGATIVE_INFINITY : v;
    }

    private static Item workload(ExportKind kind, String key, Tags tags, EntityRow row, Counters counters) {
        Metrics m = row.metrics();
        double[] v = new double[kind.series().size()];
        v[ENERGY] = counters.energy(key, row);
        v[POWER] = value(m.powerW());
        v[CPU] = value(m.cpuUsage());
        v[ExportKind.REQUESTS] = value(m.requestRate());
        v[ExportKind.P50] = seconds(m.latencyP50Ms());
        v[ExportKind.P90] = seconds(m.latencyP90Ms());
        v[ExportKind.P99] = seconds(m.latencyP99Ms());
        return new Item(key, tags, v, new ExportedHistogram[] {row.serverTime()});
    }

    /** A container's workload series, and its cgroup window's when it has a recent one (NaN: no series). */
    private static Item container(EntityRow c, Counters counters) {
        Item item = workload(ExportKind.CONTAINER, "container:" + c.id(), Tags.of("namespace", label(c.namespace()),
                "pod", label(c.pod()), "service", label(c.service()), "container_id", label(c.id()),
                "host", label(c.host())), c, counters);
        double[] v = item.values();
        boolean cgroup = c.cgroup() != null;
        v[ExportKind.MEMORY_PEAK] = cgroup ? value(c.metrics().memoryBytes()) : Double.NaN;
        v[ExportKind.MEMORY_LAST] = cgroup ? value(c.cgroup().memoryLastBytes()) : Double.NaN;
        v[ExportKind.THROTTLED] = cgroup ? value(c.cgroup().throttledS()) : Double.NaN;
        v[ExportKind.CPU_PEAK] = cgroup ? value(c.cgroup().cpuPeakCores()) : Double.NaN;
        return item;
    }

    /**
     * Process edges merged per pair of workloads ({@link #workload(ServiceNode, boolean)}) as {@link Aggregator}
     * merges them: rates summed, latencies the highest; bytes and connections as counters ({@link Counters}).
     */
    private static List<Item> edges(Rows rows, boolean serviceLevel, Counters counters) {
        Map<String, ServiceNode> nodes = rows.processGraph().nodesById();
        Map<String, ServiceEdge> merged = new LinkedHashMap<>();
        Map<String, Tags> tags = new HashMap<>();
        for (ServiceEdge e : rows.processGraph().edges()) {
            String[] s = workload(nodes.get(e.source()), serviceLevel);
            String[] t = workload(nodes.get(e.target()), serviceLevel);
            String key = "edge:" + s[0] + "/" + s[1] + "\u0000" + t[0] + "/" + t[1];
            String processKey = GraphMetricsReader.edgeKey(e.source(), e.target());
            counters.edge(processKey, key, e, rows.edgeHistograms().get(processKey));
            merged.merge(key, e, Aggregator::mergeEdges);
            tags.computeIfAbsent(key, k -> Tags.of("source_namespace", s[0], "source_workload", s[1],
                    "target_namespace", t[0], "target_workload", t[1]));
        }
        List<Item> items = new ArrayList<>();
        merged.forEach((key, e) -> {
            double[] v = new double[ExportKind.EDGE.series().size()];
            System.arraycopy(counters.edgeTotals(key), 0, v, BYTES_REQUEST, Counters.EDGE_COUNTERS);
            v[ExportKind.EDGE_REQUESTS] = value(e.requestRate());
            v[ExportKind.RTT_P50] = seconds(e.latencyP50Ms());
            v[ExportKind.RTT_P90] = seconds(e.latencyP90Ms());
            v[ExportKind.RTT_P99] = seconds(e.latencyP99Ms());
            items.add(new Item(key, tags.get(key), v, new ExportedHistogram[] {counters.edgeRtt(key)}));
        });
        return items;
    }

    /**
     * An edge end as {namespace, workload}: the service (at service level) or pod with its namespace; a container
     * outside Kubernetes as {@code container:<12 hex>}; a process outside containers as {@code process:<type>}
     * (process ids would make a series per process); every peer outside the monitored hosts as {@code external}
     * (its address would make a series per client).
     */
    static String[] workload(ServiceNode n, boolean serviceLevel) {
        if (n == null || n.external()) {
            return new String[] {"", "external"};
        }
        String ns = label(n.namespace());
        if (serviceLevel && n.service() != null) {
            return new String[] {ns, n.service()};
        }
        if (n.pod() != null) {
            return new String[] {ns, n.pod()};
        }
        if (n.containerId() != null) {
            String id = n.containerId();
            return new String[] {ns, "container:" + id.substring(0, Math.min(12, id.length()))};
        }
        return new String[] {"", "process:" + label(n.processType() != null ? n.processType() : n.name())};
    }

    private static String label(String v) {
        return v == null ? "" : v;
    }

    private static double value(Double v) {
        return v == null ? Double.NaN : v;
    }

    private static double seconds(Double ms) {
        return ms == null ? Double.NaN : ms / 1e3;
    }
}
