package io.wattgraph.graph.placement;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Solves a {@link PlacementProblem} with a chosen method: {@code ga} (BlackBox's genetic algorithm, the baseline),
 * {@code local} (greedy clustering + Kernighan-Lin style local search with restarts),
 * {@code exact} (branch and bound, at most {@value ExactSolver#MAX_WORKLOADS} workloads), or {@code auto}
 * (exact when small enough, else local).
 */
public final class PlacementService {

    public static final List<String> METHODS = List.of("auto", "local", "ga", "exact");
    static final long SEED = 42;
    static final String HOSTNAME_LABEL = "kubernetes.io/hostname";

    private PlacementService() {
    }

    public static PlacementResult solve(PlacementProblem problem, String method) {
        validate(problem);
        Instance in = new Instance(problem);
        String m = method == null ? "auto" : method.toLowerCase(Locale.ROOT);
        if (m.equals("auto")) {
            m = in.n <= 12 ? "exact" : "local";
        }
        int[] start = in.hasCurrent() ? in.current : null;
        int[] a;
        switch (m) {
            case "ga" -> a = new GeneticSolver(in, SEED).solve(start);
            case "local" -> a = new LocalSearchSolver(in, SEED).solve(List.of());
            case "exact" -> {
                ExactSolver exact = new ExactSolver(in);
                a = exact.solve(new LocalSearchSolver(in, SEED).solve(List.of()));
                if (exact.exhausted()) {
                    m = "exact-budget-exhausted"; // best found, optimality not proven
                }
            }
            default -> throw new IllegalArgumentException("method must be one of " + METHODS);
        }
        return describe(problem, in, m, a);
    }

    static void validate(PlacementProblem p) {
        if (p.workloads() == null || p.workloads().isEmpty()) {
            throw new IllegalArgumentException("workloads must not be empty");
        }
        if (p.nodes() == null || p.nodes().isEmpty()) {
            throw new IllegalArgumentException("nodes must not be empty");
        }
        java.util.Set<String> ids = new java.util.HashSet<>();
        for (PlacementProblem.Workload w : p.workloads()) {
            if (w.id() == null || !ids.add(w.id())) {
                throw new IllegalArgumentException("workload ids must be present and unique: " + w.id());
            }
            if (!(w.cpu() >= 0) || !(w.memory() >= 0)) {
                throw new IllegalArgumentException("workload " + w.id() + " has a negative cpu or memory");
            }
        }
        java.util.Set<String> nodes = new java.util.HashSet<>();
        for (PlacementProblem.NodeCapacity n : p.nodes()) {
            if (n.id() == null || !nodes.add(n.id())) {
                throw new IllegalArgumentException("node ids must be present and unique: " + n.id());
            }
        }
        if (p.nodeWeight() != null && !(p.nodeWeight() >= 0)) {
            throw new IllegalArgumentException("nodeWeight must not be negative");
        }
    }

    static PlacementResult describe(PlacementProblem p, Instance in, String method, int[] a) {
        boolean before = in.hasCurrent();
        if (a == null) {
            return new PlacementResult(method, false, Map.of(), before ? in.crossBytes(in.current) : null, 0,
                    before ? in.nodesUsed(in.current) : null, 0, before ? in.cost(in.current) : null, 0,
                    in.nodeWeight, in.totalBytes, List.of(), List.of(), List.of());
        }
        Map<String, String> assignment = new LinkedHashMap<>();
        List<PlacementResult.Move> moves = new ArrayList<>();
        List<PlacementResult.KubernetesPatch> patches = new ArrayList<>();
        for (int i = 0; i < in.n; i++) {
            PlacementProblem.Workload w = p.workloads().get(i);
            String node = p.nodes().get(a[i]).id();
            assignment.put(w.id(), node);
            if (!node.equals(w.currentNode())) {
                moves.add(new PlacementResult.Move(w.id(), w.currentNode(), node));
                patches.add(patch(w, node));
            }
        }
        List<PlacementResult.NodeLoad> loads = new ArrayList<>();
        for (int j = 0; j < in.k; j++) {
            double c = 0;
            double mem = 0;
            int count = 0;
            for (int i = 0; i < in.n; i++) {
                if (a[i] == j) {
                    c += in.cpu[i];
                    mem += in.mem[i];
                    count++;
                }
            }
            Double memCap = in.capMem[j] < Double.MAX_VALUE ? in.capMem[j] : null;
            loads.add(new PlacementResult.NodeLoad(p.nodes().get(j).id(), c, in.capCpu[j], mem, memCap, count));
        }
        return new PlacementResult(method, in.feasible(a), assignment, before ? in.crossBytes(in.current) : null,
                in.crossBytes(a), before ? in.nodesUsed(in.current) : null, in.nodesUsed(a),
                before ? in.cost(in.current) : null, in.cost(a), in.nodeWeight, in.totalBytes, moves, loads, patches);
    }

    static PlacementResult.KubernetesPatch patch(PlacementProblem.Workload w, String node) {
        Map<String, Object> selector = Map.of("spec", Map.of("template", Map.of("spec",
                Map.of("nodeSelector", Map.of(HOSTNAME_LABEL, node)))));
        Map<String, Object> affinity = Map.of("spec", Map.of("template", Map.of("spec", Map.of("affinity",
                Map.of("nodeAffinity", Map.of("requiredDuringSchedulingIgnoredDuringExecution",
                        Map.of("nodeSelectorTerms", List.of(Map.of("matchExpressions", List.of(Map.of(
                                "key", HOSTNAME_LABEL, "operator", "In", "values", List.of(node))))))))))));
        String name = w.name() == null ? w.id() : w.name();
        String json;
        try {
            json = new ObjectMapper().writeValueAsString(selector);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        String kubectl = "kubectl" + (w.namespace() == null ? "" : " -n " + shellQuote(w.namespace()))
                + " patch deployment " + shellQuote(name) + " --type strategic -p " + shellQuote(json);
        return new PlacementResult.KubernetesPatch(w.id(), w.namespace(), name, node, selector, affinity, kubectl);
    }

    static String shellQuote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
