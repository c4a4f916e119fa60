package io.wattgraph.graph.placement;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

/**
 * The stronger method: several feasible starts (the current placement, a greedy traffic-clustering packing,
 * random packings), each improved by local search with Kernighan-Lin style moves — relocate one workload,
 * swap two workloads on different nodes, empty a whole node — best-improvement on small inputs (up to 200
 * workloads), first-improvement sweeps over neighbours on larger ones, until none is left, then iterated local search (random kicks of a few workloads, keep the best). Deltas are computed from
 * the adjacency in O(degree). Seeded, so results are reproducible.
 */
final class LocalSearchSolver {

    private final Instance in;
    private final Random random;
    private final int kicks;

    LocalSearchSolver(Instance in, long seed) {
        this.in = in;
        this.random = new Random(seed);
        this.kicks = in.n <= 30 ? 300 : in.n <= 300 ? 60 : 10;
    }

    int[] solve(List<int[]> extraStarts) {
        List<int[]> starts = new ArrayList<>();
        if (in.hasCurrent() && in.feasible(in.current)) {
            starts.add(in.current.clone());
        }
        int[] greedy = greedy();
        if (greedy != null) {
            starts.add(greedy);
        }
        for (int[] s : extraStarts) {
            if (s != null && in.feasible(s)) {
                starts.add(s.clone());
            }
        }
        for (int r = 0; r < (in.n <= 200 ? 3 : 0); r++) {
            int[] s = randomPacking();
            if (s != null) {
                starts.add(s);
            }
        }
        int[] best = null;
        double bestCost = Double.POSITIVE_INFINITY;
        for (int[] start : starts) {
            State s = new State(start);
            s.descend();
            int[] localBest = s.a.clone();
            double localCost = s.cost();
            for (int kick = 0; kick < kicks; kick++) {
                State t = new State(localBest);
                t.kick(Math.max(2, in.n / 10));
                t.descend();
                if (t.cost() < localCost - Instance.EPS) {
                    localBest = t.a.clone();
                    localCost = t.cost();
                }
            }
            if (localCost < bestCost - Instance.EPS) {
                best = localBest;
                bestCost = localCost;
            }
        }
        return best;
    }

    /** Agglomerate workloads along the heaviest edges while a group fits the largest node; pack groups first-fit. */
    int[] greedy() {
        int[] group = IntStream.range(0, in.n).toArray();
        double[] gCpu = in.cpu.clone();
        double[] gMem = in.mem.clone();
        double maxCpu = Arrays.stream(in.capCpu).max().orElse(0);
        double maxMem = Arrays.stream(in.capMem).max().orElse(0);
        List<int[]> edges = new ArrayList<>();
        for (int i = 0; i < in.n; i++) {
            for (int x = 0; x < in.neighbours[i].length; x++) {
                if (in.neighbours[i][x] > i) {
                    edges.add(new int[] {i, x});
                }
            }
        }
        edges.sort(Comparator.comparingDouble((int[] e) -> -in.weights[e[0]][e[1]]));
        for (int[] e : edges) {
            int a = find(group, e[0]);
            int b = find(group, in.neighbours[e[0]][e[1]]);
            if (a != b && gCpu[a] + gCpu[b] <= maxCpu + Instance.EPS && gMem[a] + gMem[b] <= maxMem + Instance.EPS) {
                group[b] = a;
                gCpu[a] += gCpu[b];
                gMem[a] += gMem[b];
            }
        }
        List<Integer> roots = new ArrayList<>();
        for (int i = 0; i < in.n; i++) {
            if (find(group, i) == i) {
                roots.add(i);
            }
        }
        roots.sort(Comparator.comparingDouble((Integer r) -> -gCpu[r]));
        Integer[] nodes = IntStream.range(0, in.k).boxed().toArray(Integer[]::new);
        Arrays.sort(nodes, Comparator.comparingDouble((Integer j) -> -in.capCpu[j]));
        double[] c = new double[in.k];
        double[] m = new double[in.k];
        int[] nodeOfRoot = new int[in.n];
        int[] a = new int[in.n];
        for (int r : roots) {
            int chosen = -1;
            for (int j : nodes) {
                if (c[j] + gCpu[r] <= in.capCpu[j] + Instance.EPS && m[j] + gMem[r] <= in.capMem[j] + Instance.EPS) {
                    chosen = j;
                    break;
                }
            }
            if (chosen < 0) {
                return null;
            }
            c[chosen] += gCpu[r];
            m[chosen] += gMem[r];
            nodeOfRoot[r] = chosen;
        }
        for (int i = 0; i < in.n; i++) {
            a[i] = nodeOfRoot[find(group, i)];
        }
        return a;
    }

    private static int find(int[] group, int i) {
        while (group[i] != i) {
            group[i] = group[group[i]];
            i = group[i];
        }
        return i;
    }

    private int[] randomPacking() {
        Integer[] order = IntStream.range(0, in.n).boxed().toArray(Integer[]::new);
        List<Integer> list = new ArrayList<>(Arrays.asList(order));
        java.util.Collections.shuffle(list, random);
        double[] c = new double[in.k];
        double[] m = new double[in.k];
        int[] a = new int[in.n];
        for (int i : list) {
            int start = random.nextInt(in.k);
            int chosen = -1;
            for (int d = 0; d < in.k; d++) {
                int j = (start + d) % in.k;
                if (c[j] + in.cpu[i] <= in.capCpu[j] + Instance.EPS && m[j] + in.mem[i] <= in.capMem[j] + Instance.EPS) {
                    chosen = j;
                    break;
                }
            }
            if (chosen < 0) {
                return null;
            }
            a[i] = chosen;
            c[chosen] += in.cpu[i];
            m[chosen] += in.mem[i];
        }
        return a;
    }

    /** A feasible assignment with loads, counts and cost maintained incrementally. */
    private final class State {
        final int[] a;
        final double[] c = new double[in.k];
        final double[] m = new double[in.k];
        final int[] count = new int[in.k];
        double cross;

        State(int[] start) {
            a = start.clone();
            for (int i = 0; i < in.n; i++) {
                c[a[i]] += in.cpu[i];
                m[a[i]] += in.mem[i];
                count[a[i]]++;
            }
            cross = in.crossBytes(a);
        }

        double cost() {
            int used = 0;
            for (int x : count) {
                used += x > 0 ? 1 : 0;
            }
            return cross + in.nodeWeight * used;
        }

        boolean fits(int i, int node, int leaving) {
            double cc = c[node] + in.cpu[i] - (leaving >= 0 ? in.cpu[leaving] : 0);
            double mm = m[node] + in.mem[i] - (leaving >= 0 ? in.mem[leaving] : 0);
            return cc <= in.capCpu[node] + Instance.EPS && mm <= in.capMem[node] + Instance.EPS;
        }

        /** Change of cross bytes when i moves to node (others fixed). */
        double crossDelta(int i, int node) {
            double d = 0;
            for (int x = 0; x < in.neighbours[i].length; x++) {
                int j = in.neighbours[i][x];
                if (a[j] == a[i]) {
                    d += in.weights[i][x];
                } else if (a[j] == node) {
                    d -= in.weights[i][x];
                }
            }
            return d;
        }

        double moveDelta(int i, int node) {
            double d = crossDelta(i, node);
            if (count[a[i]] == 1) {
                d -= in.nodeWeight;
            }
            if (count[node] == 0) {
                d += in.nodeWeight;
            }
            return d;
        }

        void move(int i, int node) {
            cross += crossDelta(i, node);
            c[a[i]] -= in.cpu[i];
            m[a[i]] -= in.mem[i];
            count[a[i]]--;
            a[i] = node;
            c[node] += in.cpu[i];
            m[node] += in.mem[i];
            count[node]++;
        }

        double weight(int i, int j) {
            int x = Arrays.binarySearch(in.neighbours[i], j);
            return x >= 0 ? in.weights[i][x] : 0;
        }

        /**
         * First-improvement sweeps: every workload moves to its best target node (the nodes of its neighbours,
         * or every node when there are few), then swaps with its neighbours (with everyone on small inputs),
         * and when a sweep changes nothing, an attempt to empty a node. O(edges) per sweep.
         */
        void descend() {
            if (in.n <= 200) {
                descendBest();
                return;
            }
            boolean improved = true;
            boolean allNodes = in.k <= 16;
            boolean allPairs = in.n <= 200;
            while (improved) {
                improved = false;
                for (int i = 0; i < in.n; i++) {
                    int bestNode = -1;
                    double bestDelta = -Instance.EPS;
                    if (allNodes) {
                        for (int node = 0; node < in.k; node++) {
                            if (node != a[i] && fits(i, node, -1)) {
                                double d = moveDelta(i, node);
                                if (d < bestDelta) {
                                    bestDelta = d;
                                    bestNode = node;
                                }
                            }
                        }
                    } else {
                        for (int j : in.neighbours[i]) {
                            int node = a[j];
                            if (node != a[i] && fits(i, node, -1)) {
                                double d = moveDelta(i, node);
                                if (d < bestDelta) {
                                    bestDelta = d;
                                    bestNode = node;
                                }
                            }
                        }
                    }
                    if (bestNode >= 0) {
                        move(i, bestNode);
                        improved = true;
                    }
                }
                for (int i = 0; i < in.n; i++) {
                    int[] candidates = allPairs ? IntStream.range(i + 1, in.n).toArray() : in.neighbours[i];
                    for (int j : candidates) {
                        if (j == i || a[i] == a[j] || !fits(i, a[j], j) || !fits(j, a[i], i)) {
                            continue;
                        }
                        double d = crossDelta(i, a[j]) + crossDelta(j, a[i]) + 2 * weight(i, j);
                        if (d < -Instance.EPS) {
                            int ni = a[j];
                            int nj = a[i];
                            move(i, ni);
                            move(j, nj);
                            improved = true;
                        }
                    }
                }
                if (!improved) {
                    improved = emptyANode();
                }
            }
        }

        /** Best-improvement descent over all moves and all swaps: O(n (k + n)) per step, for small inputs. */
        void descendBest() {
            boolean improved = true;
            while (improved) {
                double bestDelta = -Instance.EPS;
                int bi = -1;
                int bj = -1;
                int bNode = -1;
                for (int i = 0; i < in.n; i++) {
                    for (int node = 0; node < in.k; node++) {
                        if (node != a[i] && fits(i, node, -1)) {
                            double d = moveDelta(i, node);
                            if (d < bestDelta) {
                                bestDelta = d;
                                bi = i;
                                bNode = node;
                                bj = -1;
                            }
                        }
                    }
                    for (int j = i + 1; j < in.n; j++) {
                        if (a[i] == a[j] || !fits(i, a[j], j) || !fits(j, a[i], i)) {
                            continue;
                        }
                        double d = crossDelta(i, a[j]) + crossDelta(j, a[i]) + 2 * weight(i, j);
                        if (d < bestDelta) {
                            bestDelta = d;
                            bi = i;
                            bj = j;
                        }
                    }
                }
                if (bi >= 0) {
                    if (bj >= 0) {
                        int ni = a[bj];
                        int nj = a[bi];
                        move(bi, ni);
                        move(bj, nj);
                    } else {
                        move(bi, bNode);
                    }
                    improved = true;
                } else {
                    improved = emptyANode();
                }
            }
        }

        /** Try to move every workload off the least-loaded used node onto other used nodes (saves a node). */
        boolean emptyANode() {
            for (int node = 0; node < in.k; node++) {
                if (count[node] == 0) {
                    continue;
                }
                State t = new State(a);
                boolean ok = true;
                for (int i = 0; i < in.n && ok; i++) {
                    if (t.a[i] != node) {
                        continue;
                    }
                    int target = -1;
                    double bestD = Double.POSITIVE_INFINITY;
                    for (int other = 0; other < in.k; other++) {
                        if (other != node && t.count[other] > 0 && t.fits(i, other, -1)) {
                            double d = t.crossDelta(i, other);
                            if (d < bestD) {
                                bestD = d;
                                target = other;
                            }
                        }
                    }
                    if (target < 0) {
                        ok = false;
                    } else {
                        t.move(i, target);
                    }
                }
                if (ok && t.cost() < cost() - Instance.EPS) {
                    System.arraycopy(t.a, 0, a, 0, in.n);
                    System.arraycopy(t.c, 0, c, 0, in.k);
                    System.arraycopy(t.m, 0, m, 0, in.k);
                    System.arraycopy(t.count, 0, count, 0, in.k);
                    cross = t.cross;
                    return true;
                }
            }
            return false;
        }

        void kick(int moves) {
            for (int r = 0; r < moves; r++) {
                int i = random.nextInt(in.n);
                int node = random.nextInt(in.k);
                if (node != a[i] && fits(i, node, -1)) {
                    move(i, node);
                }
            }
        }
    }
}
