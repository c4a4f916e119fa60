package io.wattgraph.graph.placement;

import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.IntStream;

/**
 * Exact optimum by branch and bound over assignments: workloads in order of decreasing traffic, capacity
 * pruning, the partial cost (cross bytes among assigned workloads plus the node weight of nodes opened so far,
 * both only growing) as the bound, and symmetry breaking among empty nodes of equal capacity. For small
 * inputs only ({@link #MAX_WORKLOADS}).
 */
final class ExactSolver {

    static final int MAX_WORKLOADS = 16;
    /** Search nodes visited before giving up on proving optimality (the best assignment found is kept). */
    static final long SEARCH_BUDGET = 20_000_000L;

    private final Instance in;
    private final int[] order;
    private final int[] assign;
    private final double[] loadCpu;
    private final double[] loadMem;
    private final int[] count;
    private int[] best;
    private double bestCost = Double.POSITIVE_INFINITY;
    private long visited;

    ExactSolver(Instance in) {
        if (in.n > MAX_WORKLOADS) {
            throw new IllegalArgumentException("exact placement is limited to " + MAX_WORKLOADS + " workloads");
        }
        this.in = in;
        double[] traffic = new double[in.n];
        for (int i = 0; i < in.n; i++) {
            traffic[i] = Arrays.stream(in.weights[i]).sum();
        }
        order = IntStream.range(0, in.n).boxed()
                .sorted(Comparator.comparingDouble((Integer i) -> -traffic[i]).thenComparing(i -> i))
                .mapToInt(Integer::intValue).toArray();
        assign = new int[in.n];
        Arrays.fill(assign, -1);
        loadCpu = new double[in.k];
        loadMem = new double[in.k];
        count = new int[in.k];
    }

    /** The optimal assignment, or null when no assignment fits the capacities. */
    int[] solve(int[] incumbent) {
        if (incumbent != null && in.feasible(incumbent)) {
            best = incumbent.clone();
            bestCost = in.cost(incumbent);
        }
        search(0, 0.0, 0);
        return best;
    }

    /** Whether the search stopped at {@link #SEARCH_BUDGET}: the answer is then the best found, not proven optimal. */
    boolean exhausted() {
        return visited > SEARCH_BUDGET;
    }

    private void search(int depth, double cross, int used) {
        if (++visited > SEARCH_BUDGET) {
            return;
        }
        if (cross + in.nodeWeight * used >= bestCost - Instance.EPS) {
            return;
        }
        if (depth == in.n) {
            best = assign.clone();
            bestCost = cross + in.nodeWeight * used;
            return;
        }
        int i = order[depth];
        for (int node = 0; node < in.k; node++) {
            if (loadCpu[node] + in.cpu[i] > in.capCpu[node] + Instance.EPS
                    || loadMem[node] + in.mem[i] > in.capMem[node] + Instance.EPS) {
                continue;
            }
            if (count[node] == 0 && equivalentEarlierEmptyNode(node)) {
                continue;
            }
            double added = 0;
            for (int x = 0; x < in.neighbours[i].length; x++) {
                int j = in.neighbours[i][x];
                if (assign[j] >= 0 && assign[j] != node) {
                    added += in.weights[i][x];
                }
            }
            assign[i] = node;
            loadCpu[node] += in.cpu[i];
            loadMem[node] += in.mem[i];
            count[node]++;
            search(depth + 1, cross + added, used + (count[node] == 1 ? 1 : 0));
            count[node]--;
            loadCpu[node] -= in.cpu[i];
            loadMem[node] -= in.mem[i];
            assign[i] = -1;
        }
    }

    private boolean equivalentEarlierEmptyNode(int node) {
        for (int other = 0; other < node; other++) {
            if (count[other] == 0 && in.capCpu[other] == in.capCpu[node] && in.capMem[other] == in.capMem[node]) {
                return true;
            }
        }
        return false;
    }
}
