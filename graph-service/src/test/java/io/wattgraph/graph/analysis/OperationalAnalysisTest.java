package io.wattgraph.graph.analysis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.Percentile;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.assertj.core.data.Percentage;
import org.junit.jupiter.api.Test;

/**
 * PowerThesis Eq. 3.3-3.5 on a reconstruction of PowerThesis Table 3.4, and critical paths with hand-computed
 * answers.
 */
class OperationalAnalysisTest {

    /** PowerThesis Table 3.4: pod, U_i %, λ_i, max λ_i, power W, threads. The hosts have 32 cores. */
    private static final Object[][] TABLE_3_4 = {
            {"compose-post-redis", 96.90, 11138, 11493.57, 7.40, 1},
            {"user-timeline-redis", 7.00, 1348, 19249.45, 1.03, 1},
            {"social-graph-service", 5.56, 401, 7210.87, 7.43, 8},
            {"nginx-thrift", 5.53, 1571, 28365.00, 13.41, 32},
            {"social-graph-redis", 5.14, 596, 11574.56, 0.55, 1},
            {"user-memcached", 4.06, 1288, 31663.31, 3.37, 8},
            {"write-home-timeline-rabbitmq", 3.03, 741, 24401.31, 3.55, 15},
            {"text-service", 2.53, 1461, 57553.38, 8.48, 231},
            {"user-mention-service", 2.51, 2845, 113337.91, 7.98, 61},
            {"compose-post-service", 2.36, 2899, 122493.18, 17.27, 296},
            {"user-timeline-service", 1.51, 471, 31116.93, 4.33, 14},
            {"post-storage-service", 1.46, 714, 48796.94, 4.40, 24},
            {"url-shorten-service", 1.08, 1420, 130699.35, 4.23, 112},
            {"unique-id-service", 0.83, 879, 105375.93, 3.75, 62},
            {"media-service", 0.81, 777, 94905.51, 3.40, 62},
            {"user-timeline-mongodb", 0.51, 962, 188029.60, 2.17, 30},
            {"post-storage-mongodb", 0.28, 481, 168390.95, 0.92, 26},
            {"url-shorten-mongodb", 0.25, 537, 214770.44, 1.12, 46},
            {"user-service", 0.19, 480, 242366.64, 1.76, 60},
            {"user-mongodb", 0.16, 537, 318997.27, 1.01, 49},
            {"social-graph-mongodb", 0.14, 228, 152210.67, 0.35, 22},
    };

    private static final double CORES = 32;

    /** The graph: the internet sends 1576 R/s to nginx-thrift; every pod's CPU usage is U_i * min(32, threads). */
    static ServiceGraph table34Graph() {
        List<ServiceNode> nodes = new ArrayList<>();
        for (Object[] row : TABLE_3_4) {
            double u = (double) row[1] / 100;
            double threads = ((Integer) row[5]).doubleValue();
            double cpu = u * Math.min(CORES, threads);
            Metrics m = new Metrics(cpu, threads, ((Integer) row[2]).doubleValue(), null, null, null, null, null,
                    (double) row[4], null, null, null, null);
            nodes.add(new ServiceNode("pod:sn/" + row[0], "pod", (String) row[0], "h1", null, (String) row[0],
                    "sn", null, null, 1, CORES, m));
        }
        nodes.add(ServiceNode.external("internet"));
        List<ServiceEdge> edges = List.of(
                ServiceEdge.requests("internet", "pod:sn/nginx-thrift", 1576, 39.34),
                ServiceEdge.requests("pod:sn/nginx-thrift", "pod:sn/compose-post-service", 2899, 13.76),
                ServiceEdge.requests("pod:sn/compose-post-service", "pod:sn/compose-post-redis", 11138, 1.36));
        return new ServiceGraph(nodes, edges);
    }

    @Test
    void reproducesTable34() {
        OperationalAnalysis a = OperationalAnalysis.of(table34Graph(), null);

        assertThat(a.arrivalRate()).isEqualTo(1576.0);
        assertThat(a.arrivalRateSource()).isEqualTo("external-edges");
        assertThat(a.bottleneck()).isEqualTo("pod:sn/compose-post-redis");
        // PowerThesis Eq. 3.5: λ_sat = 1 / D_max = λ / U_max = 1576 / 0.969 = 1626.4 (PowerThesis: 1626 R/s).
        assertThat(a.saturationArrivalRate()).isCloseTo(1626.0, within(1.0));
        assertThat(a.nodes()).hasSize(TABLE_3_4.length);
        for (int i = 0; i < TABLE_3_4.length; i++) {
            Object[] row = TABLE_3_4[i];
            OperationalAnalysis.Row r = a.nodes().get(i); // same order: by utilisation, descending
            assertThat(r.name()).isEqualTo(row[0]);
            assertThat(r.utilization()).isCloseTo((double) row[1] / 100, within(1e-9));
            assertThat(r.serviceDemand()).isCloseTo((double) row[1] / 100 / 1576, within(1e-12)); // PowerThesis Eq. 3.4
            if ((double) row[1] >= 1.0) { // the table's U_i is rounded to 0.01%: only the larger ones compare
                assertThat(r.maxArrivalRate()).as((String) row[0]).isCloseTo((double) row[3], Percentage.withPercentage(1));
            }
        }
        // compose-post-redis: 11138 / 0.969 = 11494.3 (table 11493.57)
        assertThat(a.nodes().get(0).maxArrivalRate()).isCloseTo(11494.3, within(0.1));
    }

    @Test
    void utilisationUsesTheSmallerOfCoresAndThreads() {
        assertThat(OperationalAnalysis.utilization(2.0, 4.0, 8.0)).isEqualTo(0.5);
        assertThat(OperationalAnalysis.utilization(2.0, 32.0, 2.0)).isEqualTo(1.0);
        assertThat(OperationalAnalysis.utilization(1.0, null, 4.0)).isEqualTo(0.25);
        assertThat(OperationalAnalysis.utilization(1.0, null, null)).isNull();
        assertThat(OperationalAnalysis.utilization(null, 4.0, 4.0)).isNull();
    }

    @Test
    void givenArrivalRateOverridesTheExternalEdges() {
        OperationalAnalysis a = OperationalAnalysis.of(table34Graph(), 1000.0);
        assertThat(a.arrivalRateSource()).isEqualTo("request");
        assertThat(a.saturationArrivalRate()).isCloseTo(1000 / 0.969, within(1e-6));
    }

    /**
     * internet -> A; A->B 10 ms, A->C 50 ms, C->D 5 ms, B->E 8 ms, C->F 40 ms, F->G 45 ms, G->C 60 ms (a cycle).
     * Widest from A: C 50, F 40 (A-C-F), G 40, D 5, B 10, E 8: the widest is A->C (50 ms).
     * Longest (sum): the back edge G->C is ignored; A-C-F-G = 50+40+45 = 135 ms.
     */
    static ServiceGraph pathGraph() {
        List<ServiceNode> nodes = new ArrayList<>();
        for (String n : List.of("A", "B", "C", "D", "E", "F", "G")) {
            nodes.add(ServiceNode.process(n, n, "h", null, n, 4.0, Metrics.NONE));
        }
        nodes.add(ServiceNode.external("internet"));
        List<ServiceEdge> edges = new ArrayList<>();
        edges.add(p99("internet", "A", 500));
        edges.add(p99("A", "B", 10));
        edges.add(p99("A", "C", 50));
        edges.add(p99("C", "D", 5));
        edges.add(p99("B", "E", 8));
        edges.add(p99("C", "F", 40));
        edges.add(p99("F", "G", 45));
        edges.add(p99("G", "C", 60));
        edges.add(ServiceEdge.traffic("D", "E", 1, 1)); // no latency: pruned
        return new ServiceGraph(nodes, edges);
    }

    private static ServiceEdge p99(String s, String t, double ms) {
        return new ServiceEdge(s, t, 0, 0, 1, null, null, null, null, null, null, null, ms);
    }

    @Test
    void widestPathFromTheEntryPoint() {
        CriticalPath c = CriticalPath.of(pathGraph(), Percentile.P99, "widest");
        assertThat(c.entryPoints()).containsExactly("A");
        assertThat(c.path()).containsExactly("A", "C");
        assertThat(c.widthMs()).isEqualTo(50.0);
        assertThat(c.percentile()).isEqualTo("p99");
    }

    @Test
    void widestPathPrefersTheLongerPathAmongEqualWidths() {
        List<ServiceEdge> edges = List.of(p99("A", "B", 20), p99("B", "C", 30), p99("A", "D", 20));
        List<ServiceNode> nodes = List.of("A", "B", "C", "D").stream()
                .map(n -> ServiceNode.process(n, n, "h", null, n, 4.0, Metrics.NONE)).toList();
        CriticalPath c = CriticalPath.of(new ServiceGraph(nodes, edges), Percentile.P99, "widest");
        assertThat(c.entryPoints()).containsExactly("A"); // no external callers: nodes nobody calls
        assertThat(c.path()).containsExactly("A", "B", "C"); // width 20 like A-B and A-D, total 50
        assertThat(c.totalLatencyMs()).isEqualTo(50.0);
    }

    @Test
    void longestPathIgnoresEdgesClosingCycles() {
        CriticalPath c = CriticalPath.of(pathGraph(), Percentile.P99, "longest");
        assertThat(c.path()).containsExactly("A", "C", "F", "G");
        assertThat(c.totalLatencyMs()).isEqualTo(135.0);
        assertThat(c.edgeLatenciesMs()).containsExactly(50.0, 40.0, 45.0);
        assertThat(c.ignoredCycleEdges()).isEqualTo(1);
    }

    @Test
    void noLatencyMeansNoPath() {
        CriticalPath c = CriticalPath.of(pathGraph(), Percentile.P50, "widest");
        assertThat(c.path()).isEmpty();
        assertThat(Aggregator.aggregate(pathGraph(), Level.HOST, Map.of()).nodes()).hasSize(2);
    }
}
