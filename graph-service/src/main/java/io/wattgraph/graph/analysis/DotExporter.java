package io.wattgraph.graph.analysis;

import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.Locale;

/**
 * Graphviz DOT of a graph, in the style of BlackBox Fig. 7: hosts as clusters, edge pen width proportional to the
 * bytes exchanged (both directions; 1 to 10 points, the heaviest edge 10), nodes labelled with name and type,
 * node line width from CPU usage (1 to 5) and height from memory (0.5 to 2 inches) when those are known.
 * Every id and label is a quoted, escaped DOT string, so no input can break out of it.
 */
public final class DotExporter {

    static final double MIN_WIDTH = 1.0;
    static final double MAX_WIDTH = 10.0;

    private DotExporter() {
    }

    public static String toDot(ServiceGraph graph) {
        StringBuilder dot = new StringBuilder("digraph wattgraph {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n");
        java.util.Map<String, java.util.List<ServiceNode>> byHost = new java.util.TreeMap<>();
        for (ServiceNode n : graph.nodes()) {
            byHost.computeIfAbsent(n.hostId() == null ? "" : n.hostId(), k -> new java.util.ArrayList<>()).add(n);
        }
        double maxCpu = graph.nodes().stream().filter(n -> n.metrics().cpuUsage() != null)
                .mapToDouble(n -> n.metrics().cpuUsage()).max().orElse(0);
        double maxMem = graph.nodes().stream().filter(n -> n.metrics().memoryBytes() != null)
                .mapToDouble(n -> n.metrics().memoryBytes()).max().orElse(0);
        int cluster = 0;
        for (var entry : byHost.entrySet()) {
            String indent = "  ";
            if (!entry.getKey().isEmpty()) {
                dot.append("  subgraph cluster_").append(cluster++).append(" {\n    label=")
                        .append(quote(entry.getKey())).append(";\n");
                indent = "    ";
            }
            for (ServiceNode n : entry.getValue()) {
                String label = n.name() == null ? n.id() : n.name();
                if (n.processType() != null && !n.processType().equals(label)) {
                    label += "\n" + n.processType();
                }
                dot.append(indent).append(quote(n.id())).append(" [label=").append(quote(label));
                if (n.external()) {
                    dot.append(", shape=ellipse, style=dashed");
                }
                if (n.metrics().cpuUsage() != null && maxCpu > 0) { // BlackBox Fig. 7: line width from CPU
                    dot.append(String.format(Locale.ROOT, ", penwidth=%.2f", 1 + 4 * n.metrics().cpuUsage() / maxCpu));
                }
                if (n.metrics().memoryBytes() != null && maxMem > 0) { // BlackBox Fig. 7: height from memory
                    dot.append(String.format(Locale.ROOT, ", height=%.2f",
                            0.5 + 1.5 * n.metrics().memoryBytes() / maxMem));
                }
                dot.append("];\n");
            }
            if (!entry.getKey().isEmpty()) {
                dot.append("  }\n");
            }
        }
        long maxBytes = graph.edges().stream().mapToLong(ServiceEdge::bytes).max().orElse(0);
        for (ServiceEdge e : graph.edges()) {
            dot.append("  ").append(quote(e.source())).append(" -> ").append(quote(e.target()))
                    .append(" [penwidth=").append(String.format(Locale.ROOT, "%.2f", width(e.bytes(), maxBytes)))
                    .append(", label=").append(quote(humanBytes(e.bytes()))).append("];\n");
        }
        return dot.append("}\n").toString();
    }

    /** Keeps the edges carrying at least {@code fraction} of the heaviest edge's bytes, and their nodes (Fig. 7 drops those under 10%). */
    public static ServiceGraph heavyEdges(ServiceGraph graph, double fraction) {
        if (fraction <= 0) {
            return graph;
        }
        long maxBytes = graph.edges().stream().mapToLong(ServiceEdge::bytes).max().orElse(0);
        java.util.List<ServiceEdge> edges = graph.edges().stream()
                .filter(e -> e.bytes() >= fraction * maxBytes).toList();
        java.util.Set<String> kept = new java.util.HashSet<>();
        edges.forEach(e -> {
            kept.add(e.source());
            kept.add(e.target());
        });
        return new ServiceGraph(graph.nodes().stream().filter(n -> kept.contains(n.id())).toList(), edges);
    }

    static double width(long bytes, long maxBytes) {
        return maxBytes <= 0 ? MIN_WIDTH : MIN_WIDTH + (MAX_WIDTH - MIN_WIDTH) * bytes / (double) maxBytes;
    }

    static String quote(String s) {
        StringBuilder q = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> q.append("\\\"");
                case '\\' -> q.append("\\\\");
                case '\n' -> q.append("\\n");
                case '\r' -> q.append("\\r");
                default -> q.append(c < 0x20 ? ' ' : c);
            }
        }
        return q.append('"').toString();
    }

    static String humanBytes(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }
}
