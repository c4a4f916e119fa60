package io.wattgraph.graph.analysis;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.wattgraph.graph.model.Percentile;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import org.jgrapht.Graph;
import org.jgrapht.alg.cycle.CycleDetector;
import org.jgrapht.graph.DefaultWeightedEdge;
import org.jgrapht.graph.SimpleDirectedWeightedGraph;
import org.jgrapht.traverse.TopologicalOrderIterator;

/**
 * The critical path from the entry points (PowerThesis §3.3.2). The graph is pruned to client-to-server edges that
 * have the chosen latency statistic (edges between external nodes and self-loops are dropped); an edge's
 * weight is that latency. Entry points are the internal nodes called by External nodes or, when there are
 * none, the internal nodes nobody calls.
 * <ul>
 *   <li>{@code widest} (PowerThesis' method): from each entry point the widest path (maximum bottleneck
 *       latency, a max-min Dijkstra) to every reachable node; the critical path is the one with the highest
 *       width, ties broken by the higher total latency, then by more hops.</li>
 *   <li>{@code longest}: the path with the largest total latency (longest path in topological order; on a
 *       cyclic graph the edges closing cycles in a DFS from the entry points are ignored and reported).</li>
 * </ul>
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record CriticalPath(String mode, String percentile, List<String> entryPoints, List<String> path,
                           List<Double> edgeLatenciesMs, Double widthMs, Double totalLatencyMs,
                           Integer ignoredCycleEdges) {

    public static CriticalPath of(ServiceGraph graph, Percentile p, String mode) {
        Map<String, ServiceNode> byId = graph.nodesById();
        Graph<String, DefaultWeightedEdge> g = new SimpleDirectedWeightedGraph<>(DefaultWeightedEdge.class);
        Set<String> entries = new LinkedHashSet<>();
        for (ServiceEdge e : graph.edges()) {
            boolean externalSource = byId.get(e.source()).external();
            boolean externalTarget = byId.get(e.target()).external();
            if (externalSource && !externalTarget) {
                entries.add(e.target());
            }
            Double latency = e.latencyMs(p);
            if (externalSource || externalTarget || latency == null || e.source().equals(e.target())) {
                continue;
            }
            g.addVertex(e.source());
            g.addVertex(e.target());
            DefaultWeightedEdge existing = g.getEdge(e.source(), e.target());
            if (existing == null) {
                g.setEdgeWeight(g.addEdge(e.source(), e.target()), latency);
            } else if (latency > g.getEdgeWeight(existing)) {
                g.setEdgeWeight(existing, latency); // parallel edges (unaggregated input): the slowest counts
            }
        }
        if (entries.isEmpty()) {
            g.vertexSet().stream().filter(v -> g.inDegreeOf(v) == 0).sorted().forEach(entries::add);
        }
        entries.removeIf(v -> !g.containsVertex(v));
        List<String> entryList = List.copyOf(entries);
        String name = p.name().toLowerCase(java.util.Locale.ROOT);
        if (mode.equals("longest")) {
            return longest(g, entryList, name);
        }
        return widest(g, entryList, name);
    }

    private static CriticalPath widest(Graph<String, DefaultWeightedEdge> g, List<String> entries, String p) {
        String bestEntry = null;
        String bestEnd = null;
        Map<String, String> bestParent = Map.of();
        int bestSize = 0;
        double bestWidth = -1;
        double bestTotal = -1;
        for (String entry : entries) {
            Map<String, Double> width = new HashMap<>();
            Map<String, String> parent = new HashMap<>();
            width.put(entry, Double.POSITIVE_INFINITY);
            PriorityQueue<Map.Entry<String, Double>> queue =
                    new PriorityQueue<>((a, b) -> Double.compare(b.getValue(), a.getValue()));
            queue.add(Map.entry(entry, Double.POSITIVE_INFINITY));
            Set<String> done = new java.util.HashSet<>();
            // Total latency and hops from the entry along the final parent tree: a node is finalised after its
            // parent, so one pass in finalisation order computes them (instead of walking back every path).
            Map<String, Double> totals = new HashMap<>();
            Map<String, Integer> hops = new HashMap<>();
            while (!queue.isEmpty()) {
                String u = queue.poll().getKey();
                if (!done.add(u)) {
                    continue;
                }
                String pu = parent.get(u);
                if (pu == null) {
                    totals.put(u, 0.0);
                    hops.put(u, 0);
                } else {
                    totals.put(u, totals.get(pu) + g.getEdgeWeight(g.getEdge(pu, u)));
                    hops.put(u, hops.get(pu) + 1);
                }
                for (DefaultWeightedEdge e : g.outgoingEdgesOf(u)) {
                    String v = g.getEdgeTarget(e);
                    double w = Math.min(width.get(u), g.getEdgeWeight(e));
                    if (!done.contains(v) && w > width.getOrDefault(v, -1.0)) {
                        width.put(v, w);
                        parent.put(v, u);
                        queue.add(Map.entry(v, w));
                    }
                }
            }
            for (String v : width.keySet()) {
                if (v.equals(entry)) {
                    continue;
                }
                double total = totals.get(v);
                int size = hops.get(v) + 1;
                double w = width.get(v);
                if (w > bestWidth || (w == bestWidth && (total > bestTotal
                        || (total == bestTotal && size > bestSize)))) {
                    bestEntry = entry;
                    bestEnd = v;
                    bestParent = parent;
                    bestSize = size;
                    bestWidth = w;
                    bestTotal = total;
                }
            }
        }
        List<String> best = bestEnd == null ? List.of() : walkBack(bestParent, bestEntry, bestEnd);
        return result("widest", p, entries, g, best, null);
    }

    private static CriticalPath longest(Graph<String, DefaultWeightedEdge> g, List<String> entries, String p) {
        // Drop edges that close cycles (back edges of a DFS from the entry points), then a DAG longest path.
        Graph<String, DefaultWeightedEdge> dag = new SimpleDirectedWeightedGraph<>(DefaultWeightedEdge.class);
        g.vertexSet().forEach(dag::addVertex);
        int ignored = 0;
        Set<String> visited = new java.util.HashSet<>();
        Set<String> onStack = new java.util.HashSet<>();
        List<String> roots = new ArrayList<>(entries);
        g.vertexSet().stream().sorted().forEach(roots::add);
        for (String root : roots) {
            ignored += dfs(g, dag, root, visited, onStack);
        }
        if (new CycleDetector<>(dag).detectCycles()) {
            throw new IllegalStateException("cycle left after removing back edges");
        }
        Map<String, Double> dist = new HashMap<>();
        Map<String, String> parent = new HashMap<>();
        entries.forEach(e -> dist.put(e, 0.0));
        TopologicalOrderIterator<String, DefaultWeightedEdge> order = new TopologicalOrderIterator<>(dag);
        String end = null;
        while (order.hasNext()) {
            String u = order.next();
            Double du = dist.get(u);
            if (du == null) {
                continue;
            }
            if (end == null || du > dist.get(end)) {
                end = u;
            }
            for (DefaultWeightedEdge e : dag.outgoingEdgesOf(u)) {
                String v = dag.getEdgeTarget(e);
                double d = du + dag.getEdgeWeight(e);
                if (d > dist.getOrDefault(v, -1.0) && !entries.contains(v)) {
                    dist.put(v, d);
                    parent.put(v, u);
                }
            }
        }
        List<String> path = end == null ? List.of() : walkBack(parent, null, end);
        return result("longest", p, entries, dag, path, ignored);
    }

    /**
     * Depth-first search from {@code root} copying every edge into {@code dag} except back edges (to a node on
     * the stack), which are counted. Iterative (an explicit stack) so that deep graphs cannot overflow the
     * thread's stack; visits out-edges in target order, like the recursive formulation.
     */
    private static int dfs(Graph<String, DefaultWeightedEdge> g, Graph<String, DefaultWeightedEdge> dag, String root,
                           Set<String> visited, Set<String> onStack) {
        if (!visited.add(root)) {
            return 0;
        }
        int ignored = 0;
        java.util.Deque<String> nodes = new java.util.ArrayDeque<>();
        java.util.Deque<java.util.Iterator<DefaultWeightedEdge>> iterators = new java.util.ArrayDeque<>();
        nodes.push(root);
        iterators.push(sortedOut(g, root));
        onStack.add(root);
        while (!nodes.isEmpty()) {
            String u = nodes.peek();
            java.util.Iterator<DefaultWeightedEdge> it = iterators.peek();
            if (!it.hasNext()) {
                onStack.remove(u);
                nodes.pop();
                iterators.pop();
                continue;
            }
            DefaultWeightedEdge e = it.next();
            String v = g.getEdgeTarget(e);
            if (onStack.contains(v)) {
                ignored++;
                continue;
            }
            dag.setEdgeWeight(dag.addEdge(u, v), g.getEdgeWeight(e));
            if (visited.add(v)) {
                onStack.add(v);
                nodes.push(v);
                iterators.push(sortedOut(g, v));
            }
        }
        return ignored;
    }

    private static java.util.Iterator<DefaultWeightedEdge> sortedOut(Graph<String, DefaultWeightedEdge> g, String u) {
        List<DefaultWeightedEdge> out = new ArrayList<>(g.outgoingEdgesOf(u));
        out.sort(java.util.Comparator.comparing(g::getEdgeTarget));
        return out.iterator();
    }

    private static List<String> walkBack(Map<String, String> parent, String entry, String end) {
        List<String> path = new ArrayList<>();
        for (String v = end; v != null; v = v.equals(entry) ? null : parent.get(v)) {
            path.add(v);
        }
        Collections.reverse(path);
        return path;
    }

    private static double total(Graph<String, DefaultWeightedEdge> g, List<String> path) {
        double sum = 0;
        for (int i = 1; i < path.size(); i++) {
            sum += g.getEdgeWeight(g.getEdge(path.get(i - 1), path.get(i)));
        }
        return sum;
    }

    private static CriticalPath result(String mode, String p, List<String> entries,
                                       Graph<String, DefaultWeightedEdge> g, List<String> path, Integer ignored) {
        List<Double> latencies = new ArrayList<>();
        double width = Double.POSITIVE_INFINITY;
        for (int i = 1; i < path.size(); i++) {
            double w = g.getEdgeWeight(g.getEdge(path.get(i - 1), path.get(i)));
            latencies.add(w);
            width = Math.min(width, w);
        }
        return new CriticalPath(mode, p, entries, path, latencies, latencies.isEmpty() ? null : width,
                latencies.isEmpty() ? null : total(g, path), ignored);
    }
}
