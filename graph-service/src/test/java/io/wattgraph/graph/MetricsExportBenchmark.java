package io.wattgraph.graph;

import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.wattgraph.graph.export.ExportKind;
import io.wattgraph.graph.export.GraphMetricsReader;
import io.wattgraph.graph.export.MetricsExport;
import io.wattgraph.graph.export.MetricsExportProperties;
import io.wattgraph.graph.export.PrometheusHistograms;
import io.wattgraph.graph.export.Snapshot;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.neo4j.Neo4jReader;
import io.wattgraph.schema.TransactionHistograms;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/**
 * The metrics export at 1,000 and 10,000 containers (not part of the suite): {@link GraphServiceBenchmark}'s
 * synthetic graph written as the stream job writes it (latest window and a 360-window history on every container,
 * host and namespace; a cgroup window on every container; every edge seen now; latency histograms on containers,
 * namespaces and edges), then side by side: a refresh (Neo4j read, snapshot, meter update; the
 * first one registers every meter) and a scrape of the Prometheus registry (what {@code /actuator/prometheus}
 * renders, without HTTP), with the series count and the scrape's size. Run like GraphServiceBenchmark, with the
 * edge cap (default 5000) and whether latency histograms are exported (default true) as arguments:
 * <pre>
 *   java -cp target/test-classes:target/classes:$(cat target/cp.txt) io.wattgraph.graph.MetricsExportBenchmark [MAX_EDGES [HISTOGRAMS]]
 * </pre>
 * Figures: median of 5 runs after 1 warm-up (scrape: of 10 after 2); results in docs/benchmarks/metrics-export.md.
 */
public final class MetricsExportBenchmark {

    static final int HISTORY = 360;
    static final long WINDOW_NS = 10_000_000_000L;

    public static void main(String[] args) throws Exception {
        int maxEdges = args.length > 0 ? Integer.parseInt(args[0]) : 5000; // the default cap
        boolean histograms = args.length < 2 || Boolean.parseBoolean(args[1]); // wattgraph.metrics.export.histograms
        Path dir = Files.createDirectories(Path.of("target", "bench-export-neo4j"));
        StringBuilder table = new StringBuilder("| containers | series | scrape | scrape size | first refresh "
                + "| refresh | heap after GC (export on / off) |\n|---:|---:|---:|---:|---:|---:|---:|\n");
        try (Neo4j db = Neo4jBuilders.newInProcessBuilder(dir).withDisabledServer()
                .withConfig(GraphDatabaseSettings.preallocate_logical_logs, false).build();
             Driver driver = GraphDatabase.driver(db.boltURI(), AuthTokens.none())) {
            for (int n : new int[] {1_000, 10_000}) {
                long nowNs = System.currentTimeMillis() * 1_000_000L;
                seed(driver, GraphServiceBenchmark.synthetic(n, 42), nowNs);
                System.gc();
                long heapBefore = usedHeap();
                PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
                SimpleMeterRegistry readerTimers = new SimpleMeterRegistry();
                Neo4jReader reader = new Neo4jReader(driver, readerTimers);
                MetricsExport export = new MetricsExport(new GraphMetricsReader(reader, new ServiceGraphLoader(reader)),
                        registry, new MetricsExportProperties(true, Duration.ofSeconds(15), Duration.ofMinutes(5),
                        "service", 2000, 1000, 20000, maxEdges, histograms));
                new PrometheusHistograms(export, registry, Tags.empty()).register();
                long t0 = System.nanoTime();
                Snapshot first = export.refresh();
                String firstRefresh = ms(System.nanoTime() - t0);
                String refresh = GraphServiceBenchmark.time(export::refresh, 1, 5);
                String scrape = GraphServiceBenchmark.time(registry::scrape, 2, 10);
                String text = registry.scrape();
                long series = text.lines().filter(l -> !l.startsWith("#") && !l.isEmpty()).count();
                System.gc();
                long heapWith = usedHeap();
                StringBuilder kinds = new StringBuilder();
                for (ExportKind k : ExportKind.values()) {
                    kinds.append(String.format(Locale.ROOT, " %s %d (omitted %d);", k.tagValue(), first.of(k).size(),
                            first.omitted().get(k)));
                }
                System.err.println(n + ":" + kinds);
                readerTimers.find(Neo4jReader.TIMER_NAME).timers().forEach(t -> System.err.printf(Locale.ROOT,
                        "%d: Neo4j %s: mean %.0f ms over %d reads%n", n, t.getId().getTag("query"),
                        t.mean(java.util.concurrent.TimeUnit.MILLISECONDS), t.count()));
                table.append(String.format(Locale.ROOT, "| %,d | %,d | %s | %.1f MB | %s | %s | %.0f / %.0f MB |%n", n,
                        series, scrape, text.length() / 1e6, firstRefresh, refresh, heapWith / 1e6, heapBefore / 1e6));
                registry.close();
            }
        }
        System.out.print(table);
    }

    private static long usedHeap() {
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    private static String ms(long ns) {
        return String.format(Locale.ROOT, "%.1f ms", ns / 1e6);
    }

    /**
     * Octave totals of a histogram with an hour of requests at {@code rate} per second, spread over 8 buckets
     * (0.26 to 33 ms); the export writes every bucket of a histogram, so the values do not change its size.
     */
    private static String octaves(String rate) {
        return "[i IN range(0, " + (TransactionHistograms.OCTAVE_BUCKETS - 1) + ") | CASE WHEN i >= 7 AND i <= 14 THEN "
                + "toInteger(coalesce(" + rate + ", 0) * 450) ELSE 0 END]";
    }

    /**
     * The synthetic graph with the stream job's window and history properties and latency histograms (totals over
     * windows), windows ending at {@code nowNs}.
     */
    static void seed(Driver driver, ServiceGraph g, long nowNs) {
        List<Long> ends = new ArrayList<>();
        List<Long> revisions = new ArrayList<>();
        for (int i = HISTORY - 1; i >= 0; i--) {
            ends.add(nowNs - i * WINDOW_NS);
            revisions.add(0L);
        }
        List<Map<String, Object>> procs = GraphServiceBenchmark.processRows(g);
        List<Map<String, Object>> rels = new ArrayList<>();
        for (ServiceEdge e : g.edges()) {
            rels.add(Map.of("s", e.source(), "t", e.target(), "c2s", e.bytesClientToServer(), "s2c",
                    e.bytesServerToClient(), "rate", e.requestRate(), "p99", e.latencyP99Ms()));
        }
        Map<String, Object> params = Map.of("rows", procs, "rels", rels, "now", nowNs, "w", WINDOW_NS, "ends", ends,
                "revs", revisions);
        try (Session s = driver.session()) {
            s.run("MATCH (x) DETACH DELETE x").consume();
            for (String label : List.of("Host", "Process", "Container", "External", "Namespace")) {
                s.run("CREATE CONSTRAINT IF NOT EXISTS FOR (n:" + label + ") REQUIRE n.id IS UNIQUE").consume();
            }
            String window = "metricsWindowStartNs: $now - $w, metricsWindowEndNs: $now, metricsRevision: 0, "
                    + "historyWindowEndNs: $ends, historyRevision: $revs";
            s.run("UNWIND $rows AS r MERGE (h:Host {id: r.host}) SET h += {cores: 4, powerW: 150.0, cpuUsage: 2.0, "
                    + "idlePowerW: 40.0, " + window + "}, h.historyPowerW = [x IN $ends | 150.0]", params).consume();
            s.run("UNWIND range(0, 4) AS i MERGE (n:Namespace {id: 'ns' + i}) SET n += {name: 'ns' + i, powerW: 500.0, "
                    + "cpuUsage: 50.0, requestRate: 1000.0, serverTimeP50Ns: 2e6, serverTimeP90Ns: 8e6, "
                    + "serverTimeP99Ns: 2e7, " + window + "}, n.historyPowerW = [x IN $ends | 500.0], "
                    + "n.serverTimeOctaveTotals = " + octaves("1000.0") + ", n.serverTimeSumNsTotal = 1e12", params)
                    .consume();
            s.run("""
                    UNWIND $rows AS r MATCH (h:Host {id: r.host})
                    CREATE (c:Container {id: r.ctr, hostId: r.host, podName: r.pod, podNamespace: r.ns,
                           podLabels: ['app=' + r.svc], cpuUsage: r.cpu, requestRate: r.rate, powerW: r.power,
                           serverTimeP50Ns: r.lat * 0.8e6, serverTimeP90Ns: r.lat * 2e6, serverTimeP99Ns: r.lat * 4e6,
                           metricsWindowStartNs: $now - $w, metricsWindowEndNs: $now, metricsRevision: 0,
                           historyWindowEndNs: $ends, historyRevision: $revs, memoryBytes: 536870912,
                           memoryLastBytes: 402653184, throttledS: 0.05, cpuPeakCores: r.cpu * 2,
                           cgroupWindowStartNs: $now - $w, cgroupWindowEndNs: $now, cgroupRevision: 0})-[:RUNS_ON]->(h)
                    SET c.historyPowerW = [x IN $ends | r.power],
                        c.serverTimeOctaveTotals = %s, c.serverTimeSumNsTotal = coalesce(r.rate, 0) * 3.6e12
                    CREATE (p:Process {id: r.id, hostId: r.host, pid: 1, startTimeNs: 1, comm: 'java',
                           cmdline: 'java -jar app.jar', containerId: r.ctr})-[:RUNS_ON]->(h)
                    CREATE (p)-[:IN_CONTAINER]->(c)
                    """.formatted(octaves("r.rate")), params).consume();
            s.run("UNWIND $rels AS r WITH r WHERE r.s STARTS WITH '198.' MERGE (:External {id: r.s, address: r.s})",
                    params).consume();
            s.run("""
                    UNWIND $rels AS r
                    MATCH (a {id: r.s}) WHERE a:Process OR a:External
                    MATCH (b:Process {id: r.t})
                    CREATE (a)-[:TALKS_TO {bytesClientToServer: r.c2s, bytesServerToClient: r.s2c, connections: 1,
                           connectionsEstimated: 1.0, firstSeenNs: $now - 100 * $w, lastSeenNs: $now,
                           requestRate: r.rate, clientRttP50Ns: r.p99 * 0.25e6, clientRttP90Ns: r.p99 * 0.6e6,
                           clientRttP99Ns: r.p99 * 1e6, clientRttOctaveTotals: %s,
                           clientRttSumNsTotal: coalesce(r.rate, 0) * 3.6e12}]->(b)
                    """.formatted(octaves("r.rate")), params).consume();
        }
    }
}
