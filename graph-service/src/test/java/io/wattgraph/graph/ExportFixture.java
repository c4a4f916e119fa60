package io.wattgraph.graph;

import io.wattgraph.schema.TransactionHistograms;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;

/**
 * A graph as the stream job writes it (docs/graph-model.md), for the metrics export's tests, with its latest
 * windows ending at the time it is written:
 * <pre>
 *   node-1: container c-web (shop/web-5d8f, app=web) with processes web-a and web-b; curl outside containers
 *   node-2: container c-db (shop/db-0, app=db) with process db, and a cgroup window (3 GiB peak memory); container c-batch (batch/report-1, no app label,
 *           no transactions)
 *   node-2: container c-old (shop/gone-1, app=gone), its latest window and its edge to db an hour old (stale)
 *   edges: web-a -> db, web-b -> db (merged into web -> db), curl -> web-a (load-shed: 2 observed, 5 estimated),
 *          External 198.51.100.9 -> web-a
 * </pre>
 * Hosts, the namespace {@code shop} and the containers carry the latest 10 s window and a four-window history
 * (one window's power unknown: NaN); c-web, c-db, shop and the edges to db the latency histograms of known
 * latencies summed over windows. The expected exported values are the constants below.
 */
final class ExportFixture {

    static final long WINDOW_NS = 10_000_000_000L;
    static final String WEB = "c0ffee0000000000000000000000000000000000000000000000000000000001";
    static final String DB = "c0ffee0000000000000000000000000000000000000000000000000000000002";
    static final String BATCH = "c0ffee0000000000000000000000000000000000000000000000000000000003";
    /** A container whose latest window ended an hour ago, with an edge last seen then: stale, not exported. */
    static final String OLD = "c0ffee0000000000000000000000000000000000000000000000000000000004";

    /** Per entity: history power (W) of its four windows, oldest first (NaN: unknown), and latest figures. */
    static final Map<String, double[]> HISTORY_POWER = Map.of(
            "node-1", new double[] {100, 110, Double.NaN, 120},
            "node-2", new double[] {80, 85, 90, 95},
            "shop", new double[] {30, 31, 33, 34.5},
            WEB, new double[] {10, 11, Double.NaN, 12.5},
            DB, new double[] {20, 21, 21.5, 22},
            BATCH, new double[] {1, 2, 3, 4});

    /** Energy counter expected after one refresh: the history's windows × 10 s. */
    static double energy(String id) {
        double sum = 0;
        for (double w : HISTORY_POWER.get(id)) {
            sum += Double.isNaN(w) ? 0 : w * 10;
        }
        return sum;
    }

    /**
     * Known latencies (ns → how many) of the histograms the stream job summed over windows: server times of c-web,
     * c-db and the namespace shop (both), client round trips of web-a -> db and web-b -> db.
     */
    static final Map<Long, Long> WEB_SERVER = Map.of(1_200_000L, 30L, 3_000_000L, 8L, 40_000_000L, 2L);
    static final Map<Long, Long> DB_SERVER = Map.of(200_000L, 50L, 900_000L, 10L, 4_095L, 1L, 4_096L, 1L);
    static final Map<Long, Long> WEB_A_RTT = Map.of(500_000L, 12L, 2_500_000L, 3L);
    static final Map<Long, Long> WEB_B_RTT = Map.of(600_000L, 7L, 70_000_000L, 1L, 30_000_000_000L, 1L);

    /** The durations of {@code parts} together. */
    @SafeVarargs
    static Map<Long, Long> union(Map<Long, Long>... parts) {
        Map<Long, Long> all = new HashMap<>();
        for (Map<Long, Long> p : parts) {
            p.forEach((ns, n) -> all.merge(ns, n, Long::sum));
        }
        return all;
    }

    /** How many of {@code durations} are at most {@code ns}: a cumulative bucket, from the definition. */
    static long atMost(Map<Long, Long> durations, double seconds) {
        return durations.entrySet().stream().filter(e -> e.getKey() / 1e9 <= seconds).mapToLong(Map.Entry::getValue)
                .sum();
    }

    /** The histogram as the job keeps it: the agent's buckets folded into octaves, the sum of their midpoints. */
    private static Map<String, Object> histogram(Map<Long, Long> durations) {
        int s = 7;
        TransactionHistograms.Histogram h = new TransactionHistograms.Histogram(s);
        durations.forEach((ns, n) -> h.add(List.of(TransactionHistograms.bucketOf(ns, s)), List.of(n)));
        int[] buckets = h.buckets().stream().mapToInt(Integer::intValue).toArray();
        long[] counts = h.counts().stream().mapToLong(Long::longValue).toArray();
        double sum = 0;
        for (int i = 0; i < buckets.length; i++) {
            sum += counts[i] * (double) TransactionHistograms.midpoint(buckets[i], s);
        }
        return Map.of("octaves", Arrays.stream(TransactionHistograms.octaveCounts(buckets, counts, s)).boxed().toList(),
                "sumNs", sum);
    }

    /** The sum (s) the job keeps for {@code durations}: their buckets' midpoints. */
    static double sumSeconds(Map<Long, Long> durations) {
        return (Double) histogram(durations).get("sumNs") / 1e9;
    }

    static final String CYPHER = """
            WITH $now AS now, $w AS w
            CREATE (n1:Host {id: 'node-1', cores: 8, powerW: 120.0, cpuUsage: 3.5, idlePowerW: 40.0,
                    metricsWindowStartNs: now - w, metricsWindowEndNs: now, metricsRevision: 0, energyJ: 1200.0,
                    historyWindowEndNs: [now - 3 * w, now - 2 * w, now - w, now], historyRevision: [0, 0, 0, 0],
                    historyPowerW: $p.n1, historyCpuUsage: [3.0, 3.1, 3.2, 3.5]})
            CREATE (n2:Host {id: 'node-2', cores: 8, powerW: 95.0, cpuUsage: 2.0, idlePowerW: 35.0,
                    metricsWindowStartNs: now - w, metricsWindowEndNs: now, metricsRevision: 1, energyJ: 950.0,
                    historyWindowEndNs: [now - 3 * w, now - 2 * w, now - w, now], historyRevision: [0, 0, 0, 1],
                    historyPowerW: $p.n2})
            CREATE (:Namespace {id: 'shop', name: 'shop', powerW: 34.5, cpuUsage: 1.5, requestRate: 60.0,
                    serverTimeP50Ns: 3000000, serverTimeP90Ns: 8000000, serverTimeP99Ns: 15000000,
                    metricsWindowStartNs: now - w, metricsWindowEndNs: now, metricsRevision: 0, energyJ: 345.0,
                    historyWindowEndNs: [now - 3 * w, now - 2 * w, now - w, now], historyRevision: [0, 0, 0, 0],
                    historyPowerW: $p.shop, serverTimeOctaveTotals: $h.shop.octaves,
                    serverTimeSumNsTotal: $h.shop.sumNs})
            CREATE (web:Container {id: $web, hostId: 'node-1', podUid: 'uid-web', podName: 'web-5d8f',
                    podNamespace: 'shop', podLabels: ['app=web', 'tier=front'], powerW: 12.5, cpuUsage: 0.8,
                    requestRate: 40.0, serverTimeP50Ns: 2000000, serverTimeP90Ns: 5000000, serverTimeP99Ns: 9000000,
                    metricsWindowStartNs: now - w, metricsWindowEndNs: now, metricsRevision: 0, energyJ: 125.0,
                    historyWindowEndNs: [now - 3 * w, now - 2 * w, now - w, now], historyRevision: [0, 0, 0, 0],
                    historyPowerW: $p.web, serverTimeOctaveTotals: $h.web.octaves,
                    serverTimeSumNsTotal: $h.web.sumNs})-[:RUNS_ON]->(n1)
            CREATE (db:Container {id: $db, hostId: 'node-2', podUid: 'uid-db', podName: 'db-0', podNamespace: 'shop',
                    podLabels: ['app=db'], powerW: 22.0, cpuUsage: 0.7, requestRate: 20.0, serverTimeP50Ns: 1000000,
                    serverTimeP90Ns: 2500000, serverTimeP99Ns: 4000000,
                    memoryBytes: 3221225472, memoryLastBytes: 2684354560, throttledS: 0.25, cpuPeakCores: 1.75,
                    cgroupWindowStartNs: now - w, cgroupWindowEndNs: now, cgroupRevision: 0,
                    metricsWindowStartNs: now - w, metricsWindowEndNs: now, metricsRevision: 0, energyJ: 220.0,
                    historyWindowEndNs: [now - 3 * w, now - 2 * w, now - w, now], historyRevision: [0, 0, 0, 0],
                    historyPowerW: $p.db, serverTimeOctaveTotals: $h.db.octaves,
                    serverTimeSumNsTotal: $h.db.sumNs})-[:RUNS_ON]->(n2)
            CREATE (batch:Container {id: $batch, hostId: 'node-2', podUid: 'uid-batch', podName: 'report-1',
                    podNamespace: 'batch', powerW: 4.0, cpuUsage: 0.1,
                    metricsWindowStartNs: now - w, metricsWindowEndNs: now, metricsRevision: 0, energyJ: 40.0,
                    historyWindowEndNs: [now - 3 * w, now - 2 * w, now - w, now], historyRevision: [0, 0, 0, 0],
                    historyPowerW: $p.batch})-[:RUNS_ON]->(n2)
            CREATE (webA:Process {id: 'node-1/10/1', hostId: 'node-1', pid: 10, startTimeNs: 1, comm: 'node',
                    cmdline: 'node server.js', containerId: $web})-[:IN_CONTAINER]->(web)
            CREATE (webB:Process {id: 'node-1/11/1', hostId: 'node-1', pid: 11, startTimeNs: 1, comm: 'node',
                    cmdline: 'node server.js', containerId: $web})-[:IN_CONTAINER]->(web)
            CREATE (pg:Process {id: 'node-2/20/1', hostId: 'node-2', pid: 20, startTimeNs: 1, comm: 'postgres',
                    cmdline: 'postgres -D /data', containerId: $db})-[:IN_CONTAINER]->(db)
            CREATE (curl:Process {id: 'node-1/30/1', hostId: 'node-1', pid: 30, startTimeNs: 1, comm: 'curl',
                    cmdline: 'curl http://web/'})
            CREATE (visitor:External {id: '198.51.100.9', address: '198.51.100.9'})
            CREATE (webA)-[:RUNS_ON]->(n1), (webB)-[:RUNS_ON]->(n1), (curl)-[:RUNS_ON]->(n1), (pg)-[:RUNS_ON]->(n2)
            CREATE (webA)-[:TALKS_TO {bytesClientToServer: 1000, bytesServerToClient: 50000, connections: 4,
                    connectionsEstimated: 4.0, connectionsSampled: 0, firstSeenNs: now - 60 * w, lastSeenNs: now,
                    requestRate: 12.0, clientRttP50Ns: 1500000, clientRttP90Ns: 3000000, clientRttP99Ns: 6000000,
                    latencyWindowEndNs: now, clientRttOctaveTotals: $h.webA.octaves,
                    clientRttSumNsTotal: $h.webA.sumNs}]->(pg)
            CREATE (webB)-[:TALKS_TO {bytesClientToServer: 500, bytesServerToClient: 20000, connections: 2,
                    connectionsEstimated: 2.0, connectionsSampled: 0, firstSeenNs: now - 60 * w, lastSeenNs: now,
                    requestRate: 8.0, clientRttP50Ns: 1700000, clientRttP90Ns: 2500000, clientRttP99Ns: 7000000,
                    latencyWindowEndNs: now, clientRttOctaveTotals: $h.webB.octaves,
                    clientRttSumNsTotal: $h.webB.sumNs}]->(pg)
            CREATE (curl)-[:TALKS_TO {bytesClientToServer: 300, bytesServerToClient: 7000, connections: 2,
                    connectionsEstimated: 5.0, connectionsSampled: 1, firstSeenNs: now - 6 * w, lastSeenNs: now,
                    requestRate: 2.0, clientRttP50Ns: 2100000, clientRttP90Ns: 5200000, clientRttP99Ns: 9100000}]->(webA)
            CREATE (visitor)-[:TALKS_TO {bytesClientToServer: 120, bytesServerToClient: 900, connections: 1,
                    firstSeenNs: now - 2 * w, lastSeenNs: now}]->(webA)
            CREATE (old:Container {id: $old, hostId: 'node-2', podName: 'gone-1', podNamespace: 'shop',
                    podLabels: ['app=gone'], powerW: 50.0, cpuUsage: 2.0, metricsWindowStartNs: now - 361 * w,
                    metricsWindowEndNs: now - 360 * w, metricsRevision: 0, energyJ: 500.0})-[:RUNS_ON]->(n2)
            CREATE (oldP:Process {id: 'node-2/40/1', hostId: 'node-2', pid: 40, startTimeNs: 1, comm: 'gone',
                    cmdline: 'gone', containerId: $old})-[:IN_CONTAINER]->(old)
            CREATE (oldP)-[:TALKS_TO {bytesClientToServer: 1, bytesServerToClient: 1, connections: 1,
                    firstSeenNs: now - 400 * w, lastSeenNs: now - 360 * w}]->(pg)
            """;

    private ExportFixture() {
    }

    /** Writes the graph with its latest windows ending at {@code nowNs}. */
    static void seed(String boltUri, long nowNs) {
        Map<String, Object> power = new HashMap<>();
        Map.of("n1", "node-1", "n2", "node-2", "shop", "shop", "web", WEB, "db", DB, "batch", BATCH)
                .forEach((param, id) -> power.put(param, list(HISTORY_POWER.get(id))));
        try (Driver driver = GraphDatabase.driver(boltUri, AuthTokens.none());
             Session session = driver.session()) {
            Map<String, Object> histograms = Map.of("web", histogram(WEB_SERVER), "db", histogram(DB_SERVER),
                    "shop", histogram(union(WEB_SERVER, DB_SERVER)), "webA", histogram(WEB_A_RTT),
                    "webB", histogram(WEB_B_RTT));
            session.run(CYPHER, Map.of("now", nowNs, "w", WINDOW_NS, "p", power, "h", histograms, "web", WEB, "db", DB,
                    "batch", BATCH, "old", OLD)).consume();
        }
    }

    private static List<Double> list(double[] values) {
        return Arrays.stream(values).boxed().toList();
    }
}
