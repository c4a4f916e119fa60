package io.wattgraph.graph.export;

import static io.wattgraph.graph.model.ServiceGraphLoader.dbl;
import static io.wattgraph.graph.model.ServiceGraphLoader.kubernetesOf;
import static io.wattgraph.graph.model.ServiceGraphLoader.metrics;
import static io.wattgraph.graph.model.ServiceGraphLoader.metricsOf;
import static io.wattgraph.graph.model.ServiceGraphLoader.string;

import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.MetricHistory;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.neo4j.Neo4jReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.neo4j.driver.Record;
import org.neo4j.driver.Value;
import org.neo4j.driver.exceptions.value.Uncoercible;
import org.springframework.stereotype.Component;

/**
 * Reads what the export serves: Host, Namespace and Container rows (the loader's metric and Kubernetes columns, plus
 * the latest window and the tail of the window history for energy, the latency histograms' totals) in one read
 * transaction with the client round trips' totals of the edges, and the process graph
 * of the edges seen since {@code sinceNs} through {@link ServiceGraphLoader#load}.
 */
@Component
public class GraphMetricsReader {

    /**
     * Windows of history read per entity and refresh: energy is counted per window, so a refresh may come this many
     * windows (5 min of the stream job's default 10 s windows) after the previous one without losing any.
     */
    static final int HISTORY_TAIL = 30;

    private static String windowOf(String v) {
        return v + ".metricsWindowStartNs, " + v + ".metricsWindowEndNs, " + v + ".metricsRevision, " + v
                + ".energyJ, " + v + ".historyWindowEndNs[-$tail..], " + v + ".historyRevision[-$tail..], " + v
                + ".historyPowerW[-$tail..]";
    }

    /** The columns of {@link #windowOf}. */
    private static final int WINDOW_COLUMNS = 7;

    static final String HOSTS = "MATCH (h:Host) RETURN h.id, h.idlePowerW, " + metricsOf("h") + ", " + windowOf("h");

    static final String NAMESPACES = "MATCH (n:Namespace) WHERE n.metricsWindowEndNs >= $sinceNs RETURN n.id, "
            + metricsOf("n") + ", " + windowOf("n") + ", n.serverTimeOctaveTotals, n.serverTimeSumNsTotal";

    /** Containers with a window since then, of ResourceSamples or of CgroupStats (+ the cgroup columns). */
    static final String CONTAINERS = "MATCH (c:Container) WHERE c.metricsWindowEndNs >= $sinceNs "
            + "OR c.cgroupWindowEndNs >= $sinceNs RETURN c.id, c.hostId, " + kubernetesOf("c") + ", " + metricsOf("c")
            + ", " + windowOf("c") + ", c.cgroupWindowEndNs >= $sinceNs, c.memoryLastBytes, c.throttledS, "
            + "c.cpuPeakCores, c.serverTimeOctaveTotals, c.serverTimeSumNsTotal";

    /** The client round trips' totals of the edges {@link ServiceGraphLoader#load} reads, by their ends' ids. */
    static final String EDGE_HISTOGRAMS = """
            MATCH (client:Process|External)-[talk:TALKS_TO]->(server:Process|External)
            WHERE talk.lastSeenNs >= $sinceNs AND talk.clientRttOctaveTotals IS NOT NULL
            RETURN coalesce(client.id, elementId(client)), coalesce(server.id, elementId(server)),
                   talk.clientRttOctaveTotals, talk.clientRttSumNsTotal
            """;

    /**
     * A Host, Namespace or Container as read: identity (null where the label has none), metrics of the latest
     * window, the window's bounds and revision, its energy, the history's tail, its server times' histogram over
     * windows.
     */
    public record EntityRow(String id, String host, String pod, String namespace, String service, Metrics metrics,
                            Double idlePowerW, Long windowStartNs, Long windowEndNs, long revision, Double energyJ,
                            MetricHistory history, Cgroup cgroup, ExportedHistogram serverTime) {

        public EntityRow(String id, String host, String pod, String namespace, String service, Metrics metrics,
                         Double idlePowerW, Long windowStartNs, Long windowEndNs, long revision, Double energyJ,
                         MetricHistory history) {
            this(id, host, pod, namespace, service, metrics, idlePowerW, windowStartNs, windowEndNs, revision, energyJ,
                    history, null, null);
        }

        EntityRow withServerTime(Cgroup cgroup, ExportedHistogram serverTime) {
            return new EntityRow(id, host, pod, namespace, service, metrics, idlePowerW, windowStartNs, windowEndNs,
                    revision, energyJ, history, cgroup, serverTime);
        }

        /** The window length (ns) of the stream job, from the latest window; null when unknown. */
        Long windowNs() {
            return windowStartNs == null || windowEndNs == null || windowEndNs <= windowStartNs ? null
                    : windowEndNs - windowStartNs;
        }
    }

    /**
     * A Container's latest CgroupStats window (docs/graph-model.md; its peak memory is {@code metrics.memoryBytes}):
     * null when it has none since the refresh's {@code sinceNs}.
     */
    public record Cgroup(Double memoryLastBytes, Double throttledS, Double cpuPeakCores) {
    }

    /**
     * Everything one refresh reads; {@code edgeHistograms}: client round trips by process edge
     * ({@link #edgeKey}).
     */
    public record Rows(List<EntityRow> hosts, List<EntityRow> namespaces, List<EntityRow> containers,
                       ServiceGraph processGraph, Map<String, ExportedHistogram> edgeHistograms) {

        public Rows(List<EntityRow> hosts, List<EntityRow> namespaces, List<EntityRow> containers,
                    ServiceGraph processGraph) {
            this(hosts, namespaces, containers, processGraph, Map.of());
        }
    }

    /** A process edge's key: its ends' ids. */
    static String edgeKey(String source, String target) {
        return source + "\u0000" + target;
    }

    private final Neo4jReader reader;
    private final ServiceGraphLoader loader;

    public GraphMetricsReader(Neo4jReader reader, ServiceGraphLoader loader) {
        this.reader = reader;
        this.loader = loader;
    }

    /** Hosts (all), and the namespaces, containers and edges with a window or traffic since {@code sinceNs}. */
    public Rows read(long sinceNs) {
        Map<String, Object> params = Map.of("sinceNs", sinceNs, "tail", HISTORY_TAIL);
        Rows entities = reader.readAll("metrics_export", tx -> {
            List<EntityRow> hosts = new ArrayList<>();
            for (Record r : tx.run(HOSTS, params).list()) {
                hosts.add(row(r, string(r.get(0)), null, null, null, null, dbl(r.get(1)), 2));
            }
            List<EntityRow> namespaces = new ArrayList<>();
            int histogramAt = 1 + ServiceGraphLoader.METRIC_COLUMNS + WINDOW_COLUMNS;
            for (Record r : tx.run(NAMESPACES, params).list()) {
                String ns = string(r.get(0));
                namespaces.add(row(r, ns, null, null, ns, null, null, 1).withServerTime(null,
                        histogram(r, histogramAt)));
            }
            List<EntityRow> containers = new ArrayList<>();
            for (Record r : tx.run(CONTAINERS, params).list()) {
                EntityRow c = row(r, string(r.get(0)), string(r.get(1)), string(r.get(2)), string(r.get(3)),
                        string(r.get(4)), null, 5);
                int g = 5 + ServiceGraphLoader.METRIC_COLUMNS + WINDOW_COLUMNS;
                Cgroup cgroup = r.get(g).isTrue()
                        ? new Cgroup(dbl(r.get(g + 1)), dbl(r.get(g + 2)), dbl(r.get(g + 3))) : null;
                containers.add(c.withServerTime(cgroup, histogram(r, g + 4)));
            }
            Map<String, ExportedHistogram> edges = new HashMap<>();
            for (Record r : tx.run(EDGE_HISTOGRAMS, params).list()) {
                ExportedHistogram h = histogram(r, 2);
                if (h != null) {
                    edges.put(edgeKey(string(r.get(0)), string(r.get(1))), h);
                }
            }
            return new Rows(hosts, namespaces, containers, null, edges);
        });
        ServiceGraph graph = loader.load(new GraphFilter(null, null, sinceNs, null)).graph();
        return new Rows(entities.hosts(), entities.namespaces(), entities.containers(), graph,
                entities.edgeHistograms());
    }

    /** The octave totals and sum at columns {@code at}, {@code at + 1}; null when absent. */
    private static ExportedHistogram histogram(Record r, int at) {
        return ExportedHistogram.of(list(r.get(at)), dbl(r.get(at + 1)));
    }

    private static EntityRow row(Record r, String id, String host, String pod, String namespace, String service,
                                 Double idlePowerW, int metricsAt) {
        int w = metricsAt + ServiceGraphLoader.METRIC_COLUMNS;
        return new EntityRow(id, host, pod, namespace, service, metrics(r, metricsAt), idlePowerW, lng(r.get(w)),
                lng(r.get(w + 1)), lng(r.get(w + 2)) == null ? 0 : lng(r.get(w + 2)), dbl(r.get(w + 3)),
                MetricHistory.of(list(r.get(w + 4)), list(r.get(w + 5)), null, list(r.get(w + 6)), null));
    }

    /** An integer property exactly (ns do not fit a double), null when absent or not a number. */
    private static Long lng(Value v) {
        if (v.isNull()) {
            return null;
        }
        try {
            return v.asNumber().longValue();
        } catch (Uncoercible wrongType) {
            return null;
        }
    }

    private static List<Object> list(Value v) {
        return v.isNull() ? null : v.asList();
    }
}
