package io.wattgraph.graph.export;

import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What is exported, per kind of entity: the tag keys that identify one and its series, in the order of an
 * {@link Snapshot.Item}'s values, and its latency histograms. Latencies are both the graph's percentiles of the
 * latest window as gauges with a {@code quantile} tag, and histograms over all windows in octave buckets.
 */
public enum ExportKind {
    HOST(List.of("host"), List.of(), List.of(
            Series.counter("wattgraph.host.energy", "joules", "Energy of the host (all its power) over its windows"),
            Series.gauge("wattgraph.host.power", "watts", "Power of the host in its latest window"),
            Series.gauge("wattgraph.host.cpu.usage", "cores", "CPU of the host in its latest window, cores"),
            Series.gauge("wattgraph.host.idle.power", "watts", "Idle share of the host's power"),
            Series.gauge("wattgraph.host.window.end.timestamp", "seconds",
                    "Unix time at which the host's latest window in the graph ended (exported even when stale)"))),
    NAMESPACE(List.of("namespace"), List.of(HistogramSeries.serverTime("namespace")), workload("namespace")),
    CONTAINER(List.of("namespace", "pod", "service", "container_id", "host"),
            List.of(HistogramSeries.serverTime("container")), container()),
    EDGE(List.of("source_namespace", "source_workload", "target_namespace", "target_workload"),
            List.of(new HistogramSeries("wattgraph.edge.client.rtt.histogram", "Client round trips between the "
                    + "workloads (first request byte out to last response byte in), over all windows")), List.of(
            Series.counter("wattgraph.edge.bytes", "bytes", Series.BYTES, "direction", "request"),
            Series.counter("wattgraph.edge.bytes", "bytes", Series.BYTES, "direction", "response"),
            Series.counter("wattgraph.edge.connections", null, "Connections observed between the workloads"),
            Series.counter("wattgraph.edge.connections.estimated", null,
                    "Connections the observed ones stand for under the agents' load shedding"),
            Series.gauge("wattgraph.edge.requests.per.second", null, "Requests per second in the latest window"),
            Series.gauge("wattgraph.edge.client.rtt", "seconds", Series.RTT, "quantile", "0.5"),
            Series.gauge("wattgraph.edge.client.rtt", "seconds", Series.RTT, "quantile", "0.9"),
            Series.gauge("wattgraph.edge.client.rtt", "seconds", Series.RTT, "quantile", "0.99")));

    /** Value positions shared by NAMESPACE and CONTAINER, and HOST's first three. */
    static final int ENERGY = 0, POWER = 1, CPU = 2;
    static final int REQUESTS = 3, P50 = 4, P90 = 5, P99 = 6;
    static final int HOST_IDLE = 3, HOST_WINDOW_END = 4;
    static final int MEMORY_PEAK = 7, MEMORY_LAST = 8, THROTTLED = 9, CPU_PEAK = 10;
    static final int BYTES_REQUEST = 0, BYTES_RESPONSE = 1, CONNECTIONS = 2, CONNECTIONS_ESTIMATED = 3,
            EDGE_REQUESTS = 4, RTT_P50 = 5, RTT_P90 = 6, RTT_P99 = 7;

    /**
     * One series of a kind.
     *
     * @param extra tags of this series besides the entity's (quantile, direction)
     */
    public record Series(String name, String unit, String description, boolean counter, Tags extra) {

        static final String BYTES = "Payload bytes between the workloads (request: client to server, response: "
                + "server to client)";
        static final String RTT = "Client round trip, percentile of the latest window (the highest of the merged "
                + "process pairs'; from the graph's percentiles, not a histogram)";
        static final String SERVER_TIME = "Server time (last request byte in to first response byte out), "
                + "percentile of the latest window (from the graph's percentiles, not a histogram)";

        static Series counter(String name, String unit, String description, String... extra) {
            return new Series(name, unit, description, true, Tags.of(extra));
        }

        static Series gauge(String name, String unit, String description, String... extra) {
            return new Series(name, unit, description, false, Tags.of(extra));
        }
    }

    /**
     * A latency histogram of a kind ({@link ExportedHistogram}): OTLP name {@code name} (unit s), Prometheus name
     * {@code name} with dots as underscores and {@code _seconds}, classic buckets ({@code _bucket{le}}, {@code _sum},
     * {@code _count}). Named apart from the percentile gauges, which stay: they are the latest window's exact
     * percentiles, while a quantile over octave buckets is interpolated.
     */
    public record HistogramSeries(String name, String description) {

        static HistogramSeries serverTime(String kind) {
            return new HistogramSeries("wattgraph." + kind + ".server.time.histogram", "Server times of the " + kind
                    + " (last request byte in to first response byte out), over all windows");
        }

        public String prometheusName() {
            return name.replace('.', '_') + "_seconds";
        }
    }

    private final List<String> tagKeys;
    private final List<HistogramSeries> histograms;
    private final List<Series> series;

    ExportKind(List<String> tagKeys, List<HistogramSeries> histograms, List<Series> series) {
        this.tagKeys = tagKeys;
        this.histograms = histograms;
        this.series = series;
    }

    /** The kind's latency histograms, in the order of an {@link Snapshot.Item}'s histograms. */
    public List<HistogramSeries> histograms() {
        return histograms;
    }

    public List<String> tagKeys() {
        return tagKeys;
    }

    public List<Series> series() {
        return series;
    }

    public String tagValue() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** A workload's series and the container's own, from its CgroupStats window (docs/graph-model.md). */
    private static List<Series> container() {
        String cgroup = " in its latest cgroup window (the agent's 10 ms ticks)";
        List<Series> series = new ArrayList<>(workload("container"));
        series.add(Series.gauge("wattgraph.container.memory.peak", "bytes",
                "Highest memory usage of the container" + cgroup + ": what it needs"));
        series.add(Series.gauge("wattgraph.container.memory.usage", "bytes",
                "Memory usage of the container at the end of its latest cgroup window"));
        series.add(Series.gauge("wattgraph.container.cpu.throttled", "seconds",
                "Seconds the container was throttled by its CPU quota" + cgroup));
        series.add(Series.gauge("wattgraph.container.cpu.peak", "cores",
                "Highest tick-to-tick CPU of the container" + cgroup + ", cores"));
        return List.copyOf(series);
    }

    private static List<Series> workload(String kind) {
        String p = "wattgraph." + kind + ".";
        String of = "of the " + kind;
        return List.of(
                Series.counter(p + "energy", "joules", "Energy " + of + " over its windows (active power attributed by the agents)"),
                Series.gauge(p + "power", "watts", "Power " + of + " in its latest window"),
                Series.gauge(p + "cpu.usage", "cores", "CPU " + of + " in its latest window, cores"),
                Series.gauge(p + "requests.per.second", null, "Requests served per second in the latest window"),
                Series.gauge(p + "server.time", "seconds", Series.SERVER_TIME, "quantile", "0.5"),
                Series.gauge(p + "server.time", "seconds", Series.SERVER_TIME, "quantile", "0.9"),
                Series.gauge(p + "server.time", "seconds", Series.SERVER_TIME, "quantile", "0.99"));
    }
}
