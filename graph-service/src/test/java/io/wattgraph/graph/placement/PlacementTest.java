package io.wattgraph.graph.placement;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.graph.placement.PlacementProblem.NodeCapacity;
import io.wattgraph.graph.placement.PlacementProblem.Traffic;
import io.wattgraph.graph.placement.PlacementProblem.Workload;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Placement against brute-force optima and on a reconstruction of BlackBox's Spark/Cassandra experiment. */
class PlacementTest {

    static PlacementProblem random(long seed, int n, int k) {
        Random r = new Random(seed);
        List<Workload> w = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            w.add(new Workload("w" + i, 0.5 + r.nextInt(4) * 0.5, 1 + r.nextInt(3), "n" + (i % k)));
        }
        List<NodeCapacity> nodes = new ArrayList<>();
        for (int j = 0; j < k; j++) {
            nodes.add(new NodeCapacity("n" + j, 4 + r.nextInt(3), 10));
        }
        List<Traffic> t = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            for (int j = i + 1; j < n; j++) {
                if (r.nextDouble() < 0.4) {
                    t.add(new Traffic("w" + i, "w" + j, 1 + r.nextInt(1000)));
                }
            }
        }
        return new PlacementProblem(w, nodes, t, null);
    }

    /** Plain enumeration of all k^n assignments: the reference the branch and bound is checked against. */
    static double bruteForce(Instance in) {
        int[] a = new int[in.n];
        double best = Double.POSITIVE_INFINITY;
        long total = (long) Math.pow(in.k, in.n);
        for (long code = 0; code < total; code++) {
            long c = code;
            for (int i = 0; i < in.n; i++) {
                a[i] = (int) (c % in.k);
                c /= in.k;
            }
            if (in.feasible(a)) {
                best = Math.min(best, in.cost(a));
            }
        }
        return best;
    }

    @Test
    void exactMatchesEnumerationAndLocalSearchIsWithinOnePercent() {
        int gaWorse = 0;
        for (long seed = 1; seed <= 12; seed++) {
            PlacementProblem p = random(seed, 8, 3);
            Instance in = new Instance(p);
            double optimum = bruteForce(in);
            if (Double.isInfinite(optimum)) {
                continue;
            }
            PlacementResult exact = PlacementService.solve(p, "exact");
            assertThat(exact.costAfter()).as("seed %d", seed).isEqualTo(optimum, org.assertj.core.api.Assertions.within(1e-6));
            PlacementResult local = PlacementService.solve(p, "local");
            assertThat(local.feasible()).isTrue();
            assertThat(local.costAfter()).as("local, seed %d", seed).isLessThanOrEqualTo(optimum * 1.01 + 1e-6);
            PlacementResult ga = PlacementService.solve(p, "ga");
            if (ga.feasible()) {
                assertThat(ga.costAfter()).isGreaterThanOrEqualTo(optimum - 1e-6);
                gaWorse += ga.costAfter() > optimum + 1e-6 ? 1 : 0;
            }
        }
        System.out.println("GA above the optimum on " + gaWorse + " of 12 instances");
    }

    @Test
    void largerInstancesStayFeasibleAndLocalBeatsOrTiesTheGa() {
        for (long seed = 100; seed < 103; seed++) {
            PlacementProblem p = random(seed, 40, 16); // ~50 cores asked, ~80 offered
            PlacementResult local = PlacementService.solve(p, "local");
            PlacementResult ga = PlacementService.solve(p, "ga");
            assertThat(local.feasible()).isTrue();
            if (ga.feasible()) {
                assertThat(local.costAfter()).isLessThanOrEqualTo(ga.costAfter() + 1e-6);
            }
            assertThat(local.costAfter()).isLessThanOrEqualTo(local.costBefore() + 1e-6);
        }
    }

    @Test
    void overcommitIsNeverRecommended() {
        PlacementProblem p = new PlacementProblem(
                List.of(new Workload("a", 3, 1, "n0"), new Workload("b", 3, 1, "n1")),
                List.of(new NodeCapacity("n0", 4, 8), new NodeCapacity("n1", 4, 8)),
                List.of(new Traffic("a", "b", 1_000_000)), null);
        for (String method : PlacementService.METHODS) {
            PlacementResult r = PlacementService.solve(p, method);
            assertThat(r.feasible()).as(method).isTrue();
            assertThat(r.assignment().get("a")).as(method).isNotEqualTo(r.assignment().get("b"));
            assertThat(r.crossNodeBytesAfter()).isEqualTo(1_000_000);
        }
    }

    @Test
    void amongEqualCostPlacementsTheOneMovingFewestWorkloadsIsRecommended() {
        // A client alone on one node, its server and a batch client on the other: both nodes can take all
        // three at the same cost, and moving the client is one move where the other way is two.
        for (String[] at : List.of(new String[] {"a", "b"}, new String[] {"b", "a"})) {
            List<Workload> w = List.of(new Workload("client", 0.1, 0.1, at[0]), new Workload("server", 0.1, 0.1, at[1]),
                    new Workload("batch", 0.1, 0.1, at[1]));
            List<Traffic> t = List.of(new Traffic("client", "server", 1000), new Traffic("batch", "server", 100));
            PlacementProblem p = new PlacementProblem(w, List.of(new NodeCapacity("a", 2, 10),
                    new NodeCapacity("b", 2, 10)), t, null);
            for (String method : List.of("auto", "exact", "local")) {
                PlacementResult r = PlacementService.solve(p, method);
                assertThat(r.moves()).as("%s with the client on %s", method, at[0])
                        .containsExactly(new PlacementResult.Move("client", at[0], at[1]));
            }
        }
    }

    @Test
    void movesAndKubernetesPatches() {
        PlacementProblem p = new PlacementProblem(
                List.of(new Workload("pod:shop/web-0", 1, 1, "n0", "shop", "web"), new Workload("db", 1, 1, "n1")),
                List.of(new NodeCapacity("n0", 4, 8), new NodeCapacity("n1", 4, 8)),
                List.of(new Traffic("pod:shop/web-0", "db", 5000)), 0.0);
        PlacementResult r = PlacementService.solve(p, "exact");
        assertThat(r.crossNodeBytesBefore()).isEqualTo(5000);
        assertThat(r.crossNodeBytesAfter()).isZero();
        assertThat(r.nodesUsedAfter()).isEqualTo(1);
        assertThat(r.moves()).hasSize(1);
        PlacementResult.KubernetesPatch patch = r.patches().get(0);
        assertThat(patch.node()).isEqualTo(r.moves().get(0).to());
        assertThat(patch.nodeSelectorPatch().toString()).contains("kubernetes.io/hostname=" + patch.node());
        assertThat(patch.affinityPatch().toString()).contains("requiredDuringSchedulingIgnoredDuringExecution");
        if (patch.workload().equals("pod:shop/web-0")) {
            assertThat(patch.kubectl()).startsWith("kubectl -n 'shop' patch deployment 'web' --type strategic -p '{");
        }
        assertThat(PlacementService.shellQuote("it's")).isEqualTo("'it'\\''s'");
    }

    // ---- BlackBox §7.3/7.4: 4 instances, each with a Spark worker and a Cassandra; master + spark-submit on
    // instance-4.

    static final double MB = 1e6;

    static PlacementProblem spark(boolean shuffle) {
        List<Workload> w = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            w.add(new Workload("worker-" + i, 1.5, 4e9, "instance-" + i));
            w.add(new Workload("cassandra-" + i, 1.5, 4e9, "instance-" + i));
        }
        w.add(new Workload("master", 0.5, 1e9, "instance-4"));
        List<NodeCapacity> nodes = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            nodes.add(new NodeCapacity("instance-" + i, 8, 32e9));
        }
        List<Traffic> t = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            for (int j = 1; j <= 4; j++) {
                // Q1 scans: each Cassandra sends most to its local worker; Q2 reads little from Cassandra.
                double scan = shuffle ? 5 * MB : (i == j ? 500 * MB : 20 * MB);
                t.add(new Traffic("cassandra-" + i, "worker-" + j, scan));
                if (i < j) {
                    t.add(new Traffic("worker-" + i, "worker-" + j, shuffle ? 60 * MB : 5 * MB)); // shuffle
                    t.add(new Traffic("cassandra-" + i, "cassandra-" + j, 3 * MB)); // replication/gossip
                }
            }
            t.add(new Traffic("master", "worker-" + i, shuffle ? 40 * MB : 2 * MB)); // spark-submit/driver
        }
        return new PlacementProblem(w, nodes, t, null);
    }

    @Test
    void sparkCassandraQ1ScanKeepsEachCassandraWithAWorker() {
        PlacementProblem q1 = spark(false);
        PlacementResult ga = PlacementService.solve(q1, "ga");
        PlacementResult local = PlacementService.solve(q1, "local");
        PlacementResult exact = PlacementService.solve(q1, "exact");
        report("Q1", ga, local, exact);
        assertThat(local.crossNodeBytesAfter()).isLessThan(local.crossNodeBytesBefore());
        assertThat(local.nodesUsedAfter()).isEqualTo(2); // 50% of the servers, as the GA of BlackBox
        assertThat(local.costAfter()).isEqualTo(exact.costAfter(), org.assertj.core.api.Assertions.within(1e-6));
        if (ga.feasible()) {
            assertThat(local.crossNodeBytesAfter()).isLessThanOrEqualTo(ga.crossNodeBytesAfter());
        }
        for (int i = 1; i <= 4; i++) { // scan-optimised: every Cassandra with a worker reading from it
            assertThat(local.assignment().get("cassandra-" + i)).isEqualTo(local.assignment().get("worker-" + i));
        }
    }

    @Test
    void sparkCassandraQ2ShufflePutsTheWorkersTogether() {
        PlacementProblem q2 = spark(true);
        PlacementResult ga = PlacementService.solve(q2, "ga");
        PlacementResult local = PlacementService.solve(q2, "local");
        PlacementResult exact = PlacementService.solve(q2, "exact");
        report("Q2", ga, local, exact);
        assertThat(local.crossNodeBytesAfter()).isLessThan(local.crossNodeBytesBefore());
        assertThat(local.nodesUsedAfter()).isEqualTo(2);
        assertThat(local.costAfter()).isEqualTo(exact.costAfter(), org.assertj.core.api.Assertions.within(1e-6));
        if (ga.feasible()) {
            assertThat(local.crossNodeBytesAfter()).isLessThanOrEqualTo(ga.crossNodeBytesAfter());
        }
        String workers = local.assignment().get("worker-1");
        for (int i = 2; i <= 4; i++) { // shuffle-optimised: all Spark workers on one server, with the master
            assertThat(local.assignment().get("worker-" + i)).isEqualTo(workers);
        }
        assertThat(local.assignment().get("master")).isEqualTo(workers);
    }

    private static void report(String q, PlacementResult ga, PlacementResult local, PlacementResult exact) {
        System.out.printf("%s cross-node MB: baseline %.1f, GA %s, local %.1f, exact %.1f; nodes %d/%d/%d%n", q,
                local.crossNodeBytesBefore() / MB, ga.feasible() ? String.format("%.1f", ga.crossNodeBytesAfter() / MB)
                        : "infeasible", local.crossNodeBytesAfter() / MB, exact.crossNodeBytesAfter() / MB,
                ga.nodesUsedAfter(), local.nodesUsedAfter(), exact.nodesUsedAfter());
    }
}
