package io.wattgraph.graph.placement;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The problem in arrays for the solvers: workloads 0..n-1, nodes 0..k-1, symmetric weighted adjacency. */
final class Instance {

    static final double EPS = 1e-9;

    final int n;
    final int k;
    final double[] cpu;
    final double[] mem;
    final double[] capCpu;
    final double[] capMem;
    final int[][] neighbours;
    final double[][] weights;
    final double totalBytes;
    final double nodeWeight;
    final int[] current; // -1 when unknown

    Instance(PlacementProblem p) {
        n = p.workloads().size();
        k = p.nodes().size();
        cpu = new double[n];
        mem = new double[n];
        current = new int[n];
        Map<String, Integer> w = new HashMap<>();
        Map<String, Integer> nodeIndex = new HashMap<>();
        capCpu = new double[k];
        capMem = new double[k];
        for (int j = 0; j < k; j++) {
            capCpu[j] = p.nodes().get(j).cpu();
            capMem[j] = p.nodes().get(j).memory();
            nodeIndex.put(p.nodes().get(j).id(), j);
        }
        for (int i = 0; i < n; i++) {
            PlacementProblem.Workload wl = p.workloads().get(i);
            cpu[i] = wl.cpu();
            mem[i] = wl.memory();
            w.put(wl.id(), i);
            current[i] = wl.currentNode() == null ? -1 : nodeIndex.getOrDefault(wl.currentNode(), -1);
        }
        List<Map<Integer, Double>> adj = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            adj.add(new HashMap<>());
        }
        double total = 0;
        for (PlacementProblem.Traffic t : p.traffic()) {
            Integer a = w.get(t.a());
            Integer b = w.get(t.b());
            if (a == null || b == null || a.equals(b) || t.bytes() <= 0) {
                continue;
            }
            adj.get(a).merge(b, t.bytes(), Double::sum);
            adj.get(b).merge(a, t.bytes(), Double::sum);
            total += t.bytes();
        }
        totalBytes = total;
        neighbours = new int[n][];
        weights = new double[n][];
        for (int i = 0; i < n; i++) {
            neighbours[i] = adj.get(i).keySet().stream().mapToInt(Integer::intValue).sorted().toArray();
            weights[i] = new double[neighbours[i].length];
            for (int x = 0; x < neighbours[i].length; x++) {
                weights[i][x] = adj.get(i).get(neighbours[i][x]);
            }
        }
        nodeWeight = p.nodeWeight() != null ? p.nodeWeight() : 0.01 * totalBytes;
    }

    boolean hasCurrent() {
        for (int c : current) {
            if (c < 0) {
                return false;
            }
        }
        return true;
    }

    double crossBytes(int[] a) {
        double cross = 0;
        for (int i = 0; i < n; i++) {
            for (int x = 0; x < neighbours[i].length; x++) {
                int j = neighbours[i][x];
                if (j > i && a[i] != a[j]) {
                    cross += weights[i][x];
                }
            }
        }
        return cross;
    }

    int nodesUsed(int[] a) {
        boolean[] used = new boolean[k];
        int count = 0;
        for (int x : a) {
            if (!used[x]) {
                used[x] = true;
                count++;
            }
        }
        return count;
    }

    double cost(int[] a) {
        return crossBytes(a) + nodeWeight * nodesUsed(a);
    }

    boolean feasible(int[] a) {
        double[] c = new double[k];
        double[] m = new double[k];
        for (int i = 0; i < n; i++) {
            c[a[i]] += cpu[i];
            m[a[i]] += mem[i];
        }
        for (int j = 0; j < k; j++) {
            if (c[j] > capCpu[j] + EPS || m[j] > capMem[j] + EPS) {
                return false;
            }
        }
        return true;
    }
}
