package io.wattgraph.graph.power;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.wattgraph.graph.analysis.OperationalAnalysis;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * PRESTO's latency-SLA driven budget (PowerThesis Ch. 5) over a pod-level graph.
 * <ul>
 *   <li>λsrv_i: requests served by pod i (its {@code requestRate}, else the sum of its incoming edges'),
 *       λclt_i: requests pod i sends to the pods it calls (sum of its outgoing edges' {@code requestRate}).</li>
 *   <li>PowerThesis Eq. 5.2 for an edge i→j: α_ij = λsrv_i · λsrv_j / λclt_i²; α_entry = 1. A pod's α_j is
 *       the highest α_ij over its callers ("the highest available α_j" of PowerThesis Eq. 5.3).</li>
 *   <li>β as the breadth-first search from the entry point of PowerThesis Fig. 5.4 leaves it: β_entry = 1,
 *       β_j = max over callers i of β_i · α_ij, computed in topological order (O(V + E)); call edges closing a
 *       cycle (back edges of a DFS from the entry point) do not propagate β and are counted in a warning.</li>
 *   <li>S_i: the pod's {@code serviceTimeMs}, else solved from PowerThesis Eq. 5.1,
 *       S_i = L_i − Σ_j α_ij (L_j + N_ij), floored at 0; N_ij = edge latency (client side) − L_j (server side),
 *       floored at 0.</li>
 *   <li>PowerThesis Eq. 5.3: L_out = S_out + N_out with S_out = Σ β_i S_i and N_out = Σ_(i,j) α_j N_ij. The
 *       measured L_out(t) is the entry point's {@code latencyAvgMs} when written, else this estimate.</li>
 *   <li>PowerThesis Eq. 5.4: S_i(t+1) = S_i · (L̄ − N_out) / S_out.</li>
 *   <li>Per host k, PowerThesis Eq. 5.5: the pod c with the highest utilisation U (PowerThesis Eq. 3.3);
 *       Eq. 5.6: e_u = U_c − λ_c · S_c(t+1); Eq. 5.7: e_l = |(L̄ − L_out) / L̄|;
 *       Eq. 5.8: P_c = P(k,t) + e_u · e_l · P_act(k,t); Eq. 5.9: P_max(k) when L_out > 2 L̄ (the escape),
 *       else P_c (all PowerThesis); finally clamped to the host's [min, max].</li>
 * </ul>
 */
public final class Presto {

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Result(String entryPoint, double slaMs, double latencyMs, boolean latencyMeasured,
                         double estimatedLatencyMs, double serviceTimeMs, double networkTimeMs, double latencyError,
                         boolean slaEscape, Map<String, Double> alpha, Map<String, Double> beta,
                         Map<String, Double> serviceTimesMs, Map<String, Double> targetServiceTimesMs,
                         List<Budget> budgets, List<String> warnings) {
    }

    private Presto() {
    }

    public static Result compute(ServiceGraph graph, String entryPoint, double slaMs, List<HostPower> hosts) {
        Map<String, ServiceNode> byId = graph.nodesById();
        List<String> warnings = new ArrayList<>();
        String entry = entryPoint != null ? entryPoint : findEntry(graph, byId);
        if (entry == null || !byId.containsKey(entry) || byId.get(entry).external()) {
            throw new IllegalArgumentException("entry point " + entry + " is not a pod of the graph");
        }
        Map<String, List<ServiceEdge>> out = new HashMap<>();
        Map<String, Double> incomingRate = new HashMap<>();
        for (ServiceEdge e : graph.edges()) {
            if (e.source().equals(e.target()) || byId.get(e.target()).external()) {
                continue;
            }
            if (e.requestRate() != null) {
                incomingRate.merge(e.target(), e.requestRate(), Double::sum);
            }
            if (!byId.get(e.source()).external()) {
                out.computeIfAbsent(e.source(), k -> new ArrayList<>()).add(e);
            }
        }
        Map<String, Double> served = new HashMap<>();
        for (ServiceNode n : graph.nodes()) {
            Double r = n.metrics().requestRate() != null ? n.metrics().requestRate() : incomingRate.get(n.id());
            served.put(n.id(), r == null ? 0.0 : r);
        }
        // BFS from the entry point: α per edge, β per pod.
        Map<String, Double> beta = new TreeMap<>();
        Map<String, Double> alpha = new TreeMap<>();
        Map<ServiceEdge, Double> edgeAlpha = new LinkedHashMap<>();
        beta.put(entry, 1.0);
        alpha.put(entry, 1.0);
        // β_j = max over paths from the entry point of the product of α (the BFS "highest β among the visits"),
        // computed in topological order; edges closing a cycle (back edges of a DFS from the entry point) do not
        // propagate β, otherwise a cycle whose α product exceeds 1 would grow β without bound.
        java.util.Set<ServiceEdge> backEdges = backEdges(entry, out);
        if (!backEdges.isEmpty()) {
            warnings.add(backEdges.size() + " call edge(s) closing a cycle ignored for beta");
        }
        for (String i : topologicalOrder(entry, out, backEdges)) {
            if (beta.containsKey(i)) {
                relax(i, entry, out, served, beta, alpha, edgeAlpha, backEdges);
            }
        }
        // Service and network times (PowerThesis Eq. 5.1), then PowerThesis Eq. 5.3.
        Map<String, Double> service = new TreeMap<>();
        for (String i : beta.keySet()) {
            ServiceNode n = byId.get(i);
            Double s = n.metrics().serviceTimeMs();
            if (s == null) {
                Double l = n.metrics().latencyAvgMs();
                if (l == null) {
                    warnings.add("pod " + i + " has neither serviceTimeMs nor latencyAvgMs: S = 0");
                    s = 0.0;
                } else {
                    double downstream = 0;
                    for (ServiceEdge e : out.getOrDefault(i, List.of())) {
                        Double lj = byId.get(e.target()).metrics().latencyAvgMs();
                        downstream += edgeAlpha.getOrDefault(e, 0.0) * ((lj == null ? 0 : lj) + network(e, lj));
                    }
                    s = Math.max(0, l - downstream);
                }
            }
            service.put(i, s);
        }
        double sOut = 0;
        for (var b : beta.entrySet()) {
            sOut += b.getValue() * service.get(b.getKey());
        }
        double nOut = 0;
        for (ServiceEdge e : edgeAlpha.keySet()) {
            nOut += alpha.get(e.target()) * network(e, byId.get(e.target()).metrics().latencyAvgMs());
        }
        double estimated = sOut + nOut;
        Double measured = byId.get(entry).metrics().latencyAvgMs();
        double lOut = measured != null ? measured : estimated;
        // PowerThesis Eq. 5.4
        Map<String, Double> target = new TreeMap<>();
        double scale = sOut > 0 ? (slaMs - nOut) / sOut : 1;
        if (slaMs <= nOut) {
            warnings.add("the SLA is not above the network time N_out: service time targets are 0");
            scale = 0;
        }
        for (var s : service.entrySet()) {
            target.put(s.getKey(), s.getValue() * scale);
        }
        double el = Math.abs((slaMs - lOut) / slaMs); // PowerThesis Eq. 5.7
        boolean escape = lOut > 2 * slaMs;
        List<Budget> budgets = new ArrayList<>();
        Map<String, List<ServiceNode>> byHost = new HashMap<>(); // the controlled pods of each host
        for (ServiceNode n : graph.nodes()) {
            if (n.hostId() != null && beta.containsKey(n.id())) {
                byHost.computeIfAbsent(n.hostId(), k -> new ArrayList<>()).add(n);
            }
        }
        for (HostPower h : hosts) {
            budgets.add(hostBudget(h, byHost.getOrDefault(h.host(), List.of()), served, target, el, escape, lOut,
                    slaMs));
        }
        return new Result(entry, slaMs, lOut, measured != null, estimated, sOut, nOut, el, escape, alpha, beta,
                service, target, budgets, warnings);
    }

    private static Budget hostBudget(HostPower h, List<ServiceNode> pods,
                                     Map<String, Double> served, Map<String, Double> target, double el,
                                     boolean escape, double lOut, double slaMs) {
        Map<String, Double> terms = new LinkedHashMap<>();
        if (escape) {
            double b = Hyppo.clamp(h.maxW(), h);
            terms.put("latencyMs", lOut);
            return new Budget(h.host(), "presto", h.currentPowerW(), b, String.format(Locale.ROOT,
                    "Eq. 5.9: latency %.2f ms > 2 x SLA %.2f ms, so the host maximum %.2f W", lOut, slaMs, h.maxW()),
                    terms);
        }
        // PowerThesis Eq. 5.5: the controlled pod of this host with the highest utilisation.
        ServiceNode candidate = null;
        double uc = -1;
        for (ServiceNode n : pods) {
            Double u = OperationalAnalysis.utilization(n.metrics().cpuUsage(), n.cores(), n.metrics().threads());
            if (u != null && u > uc) {
                uc = u;
                candidate = n;
            }
        }
        if (candidate == null || h.currentPowerW() == null) {
            double keep = Hyppo.clamp(h.currentPowerW() == null ? h.maxW() : h.currentPowerW(), h);
            return new Budget(h.host(), "presto", h.currentPowerW(), keep, candidate == null
                    ? "no pod of the application with a utilisation on this host: budget unchanged"
                    : "no current power for this host: the maximum", terms);
        }
        double lambda = served.get(candidate.id());
        double eu = uc - lambda * target.get(candidate.id()) / 1000.0; // PowerThesis Eq. 5.6 (S in ms, λ in 1/s)
        double act = h.actionablePowerW() == null ? 0 : h.actionablePowerW();
        double raw = h.currentPowerW() + eu * el * act; // PowerThesis Eq. 5.8
        double b = Hyppo.clamp(raw, h);
        terms.put("candidateUtilization", uc);
        terms.put("candidateArrivalRate", lambda);
        terms.put("targetServiceTimeMs", target.get(candidate.id()));
        terms.put("utilizationError", eu);
        terms.put("latencyError", el);
        terms.put("actionablePowerW", act);
        terms.put("unclampedW", raw);
        String reason = String.format(Locale.ROOT,
                "Eq. 5.8: %.2f W + e_u %.4f (pod %s: U %.4f vs target %.4f) x e_l %.4f x P_act %.2f W = %.2f W",
                h.currentPowerW(), eu, candidate.id(), uc, uc - eu, el, act, raw) + Hyppo.clampReason(raw, b, h);
        return new Budget(h.host(), "presto", h.currentPowerW(), b, reason, terms);
    }

    /** Sets α of i's outgoing edges and raises its callees' α and β; returns the callees whose β grew. */
    private static List<String> relax(String i, String entry, Map<String, List<ServiceEdge>> out,
                                      Map<String, Double> served, Map<String, Double> beta,
                                      Map<String, Double> alpha, Map<ServiceEdge, Double> edgeAlpha,
                                      java.util.Set<ServiceEdge> backEdges) {
        List<String> grown = new ArrayList<>();
        List<ServiceEdge> calls = out.getOrDefault(i, List.of());
        double clientRate = calls.stream().mapToDouble(e -> e.requestRate() == null ? 0 : e.requestRate()).sum();
        for (ServiceEdge e : calls) {
            String j = e.target();
            double a = clientRate > 0 ? served.get(i) * served.get(j) / (clientRate * clientRate) : 0;
            edgeAlpha.put(e, a);
            if (!j.equals(entry)) {
                alpha.merge(j, a, Math::max);
            }
            double b = beta.get(i) * a;
            if (!j.equals(entry) && !backEdges.contains(e) && (!beta.containsKey(j) || b > beta.get(j))) {
                beta.put(j, b);
                grown.add(j);
            }
        }
        return grown;
    }

    /** Back edges of an iterative DFS from the entry point (out-edges in target order); edges into it excluded. */
    private static java.util.Set<ServiceEdge> backEdges(String entry, Map<String, List<ServiceEdge>> out) {
        java.util.Set<ServiceEdge> back = new java.util.HashSet<>();
        java.util.Set<String> visited = new java.util.HashSet<>();
        java.util.Set<String> onStack = new java.util.HashSet<>();
        Deque<String> nodes = new ArrayDeque<>();
        Deque<java.util.Iterator<ServiceEdge>> iterators = new ArrayDeque<>();
        visited.add(entry);
        onStack.add(entry);
        nodes.push(entry);
        iterators.push(sortedCalls(out, entry));
        while (!nodes.isEmpty()) {
            java.util.Iterator<ServiceEdge> it = iterators.peek();
            if (!it.hasNext()) {
                onStack.remove(nodes.pop());
                iterators.pop();
                continue;
            }
            ServiceEdge e = it.next();
            String j = e.target();
            if (j.equals(entry)) {
                continue;
            }
            if (onStack.contains(j)) {
                back.add(e);
            } else if (visited.add(j)) {
                onStack.add(j);
                nodes.push(j);
                iterators.push(sortedCalls(out, j));
            }
        }
        return back;
    }

    private static java.util.Iterator<ServiceEdge> sortedCalls(Map<String, List<ServiceEdge>> out, String i) {
        List<ServiceEdge> calls = new ArrayList<>(out.getOrDefault(i, List.of()));
        calls.sort(java.util.Comparator.comparing(ServiceEdge::target));
        return calls.iterator();
    }

    /**
     * The nodes reachable from the entry point in topological order of the call edges minus {@code backEdges}
     * and minus edges into the entry point (Kahn's algorithm).
     */
    private static List<String> topologicalOrder(String entry, Map<String, List<ServiceEdge>> out,
                                                 java.util.Set<ServiceEdge> backEdges) {
        Map<String, Integer> indegree = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        indegree.put(entry, 0);
        stack.push(entry);
        while (!stack.isEmpty()) {
            for (ServiceEdge e : out.getOrDefault(stack.pop(), List.of())) {
                String j = e.target();
                if (j.equals(entry) || backEdges.contains(e)) {
                    continue;
                }
                if (!indegree.containsKey(j)) {
                    indegree.put(j, 0);
                    stack.push(j);
                }
                indegree.merge(j, 1, Integer::sum);
            }
        }
        List<String> order = new ArrayList<>();
        Deque<String> ready = new ArrayDeque<>();
        ready.add(entry);
        while (!ready.isEmpty()) {
            String i = ready.poll();
            order.add(i);
            for (ServiceEdge e : out.getOrDefault(i, List.of())) {
                String j = e.target();
                if (!j.equals(entry) && !backEdges.contains(e) && indegree.merge(j, -1, Integer::sum) == 0) {
                    ready.add(j);
                }
            }
        }
        return order;
    }

    private static double network(ServiceEdge e, Double serverLatency) {
        if (e.latencyAvgMs() == null) {
            return 0;
        }
        return Math.max(0, e.latencyAvgMs() - (serverLatency == null ? 0 : serverLatency));
    }

    private static String findEntry(ServiceGraph graph, Map<String, ServiceNode> byId) {
        String best = null;
        double bestRate = -1;
        for (ServiceEdge e : graph.edges()) {
            if (byId.get(e.source()).external() && !byId.get(e.target()).external()) {
                double r = e.requestRate() == null ? 0 : e.requestRate();
                if (r > bestRate) {
                    bestRate = r;
                    best = e.target();
                }
            }
        }
        return best;
    }
}
