package io.wattgraph.graph.analysis;

import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Projects a process-level graph onto a coarser {@link Level}. Node metrics: summed over members (cpuUsage,
 * threads, requestRate, powerW), latencies the maximum; memory and requests summed over the members' distinct
 * containers ({@link #containersOwn}); unless the group itself has measured metrics ({@code groupMetrics}, e.g. a
 * Container's own properties), which win field by field. Edges between
 * the same two groups are merged: bytes, connections (observed, estimated and sampled) and request rates summed,
 * latencies the maximum,
 * firstSeenNs the minimum and lastSeenNs the maximum. Traffic inside a group becomes a self-loop edge.
 */
public final class Aggregator {

    private Aggregator() {
    }

    public static String groupId(ServiceNode n, Level level) {
        if (n.external()) {
            return n.id();
        }
        return switch (level) {
            case PROCESS -> n.id();
            case CONTAINER -> n.containerId() != null ? "container:" + n.containerId() : n.id();
            case POD -> n.pod() != null ? "pod:" + ns(n) + "/" + n.pod() : groupId(n, Level.CONTAINER);
            case SERVICE -> n.service() != null ? "service:" + ns(n) + "/" + n.service() : groupId(n, Level.POD);
            case NAMESPACE -> n.namespace() != null ? "namespace:" + n.namespace() : groupId(n, Level.CONTAINER);
            case HOST -> n.hostId() != null ? "host:" + n.hostId() : n.id();
        };
    }

    private static String ns(ServiceNode n) {
        return n.namespace() == null ? "" : n.namespace();
    }

    public static ServiceGraph aggregate(ServiceGraph graph, Level level, Map<String, Metrics> groupMetrics) {
        if (level == Level.PROCESS) {
            return graph;
        }
        Map<String, List<ServiceNode>> groups = new LinkedHashMap<>();
        Map<String, String> groupOf = new LinkedHashMap<>();
        for (ServiceNode n : graph.nodes()) {
            String g = groupId(n, level);
            groupOf.put(n.id(), g);
            groups.computeIfAbsent(g, k -> new ArrayList<>()).add(n);
        }
        List<ServiceNode> nodes = new ArrayList<>();
        groups.forEach((g, members) -> nodes.add(groupNode(g, members, groupMetrics.get(g),
                containersOwn(members, groupMetrics))));

        Map<String, ServiceEdge> edges = new LinkedHashMap<>();
        for (ServiceEdge e : graph.edges()) {
            String s = groupOf.get(e.source());
            String t = groupOf.get(e.target());
            edges.merge(s + "\u0000" + t, e.between(s, t), Aggregator::mergeEdges);
        }
        return new ServiceGraph(nodes, new ArrayList<>(edges.values()));
    }

    /**
     * What only containers measure (memory, from their cgroup windows; requests), summed over the distinct
     * containers of the members: a pod's, service's or namespace's memory is its containers', not its processes'
     * (which have none), and a container with several processes counts once.
     */
    static Metrics containersOwn(List<ServiceNode> members, Map<String, Metrics> groupMetrics) {
        Double memory = null, cpuRequest = null, memoryRequest = null;
        Set<String> seen = new HashSet<>();
        for (ServiceNode n : members) {
            Metrics c = n.containerId() == null || !seen.add(n.containerId()) ? null
                    : groupMetrics.get("container:" + n.containerId());
            if (c != null) {
                memory = sum(memory, c.memoryBytes());
                cpuRequest = sum(cpuRequest, c.cpuRequest());
                memoryRequest = sum(memoryRequest, c.memoryRequestBytes());
            }
        }
        return new Metrics(null, null, null, null, null, null, null, null, null, memory, cpuRequest, memoryRequest,
                null);
    }

    private static ServiceNode groupNode(String id, List<ServiceNode> members, Metrics measured, Metrics containers) {
        ServiceNode first = members.get(0);
        if (members.size() == 1 && id.equals(first.id())) {
            return first; // not grouped at this level (external, or no key)
        }
        String kind = id.substring(0, id.indexOf(':'));
        String name = id.substring(id.indexOf(':') + 1);
        if (kind.equals("pod") || kind.equals("service")) {
            name = name.substring(name.indexOf('/') + 1);
        }
        Metrics combined = containers.orElse(Metrics.combine(members.stream().map(ServiceNode::metrics).toList()));
        Metrics metrics = measured == null ? combined : measured.orElse(combined);
        return new ServiceNode(id, kind, name, common(members, ServiceNode::hostId),
                common(members, ServiceNode::containerId), common(members, ServiceNode::pod),
                common(members, ServiceNode::namespace), common(members, ServiceNode::service),
                common(members, ServiceNode::processType),
                members.stream().mapToInt(ServiceNode::members).sum(), common(members, ServiceNode::cores), metrics);
    }

    private static <T> T common(List<ServiceNode> members, java.util.function.Function<ServiceNode, T> f) {
        T value = f.apply(members.get(0));
        for (ServiceNode m : members) {
            if (!Objects.equals(value, f.apply(m))) {
                return null;
            }
        }
        return value;
    }

    public static ServiceEdge mergeEdges(ServiceEdge a, ServiceEdge b) {
        return new ServiceEdge(a.source(), a.target(), a.bytesClientToServer() + b.bytesClientToServer(),
                a.bytesServerToClient() + b.bytesServerToClient(), a.connections() + b.connections(),
                a.connectionsEstimated() + b.connectionsEstimated(), a.connectionsSampled() + b.connectionsSampled(),
                min(a.firstSeenNs(), b.firstSeenNs()), max(a.lastSeenNs(), b.lastSeenNs()),
                sum(a.requestRate(), b.requestRate()), maxD(a.latencyAvgMs(), b.latencyAvgMs()),
                maxD(a.latencyP50Ms(), b.latencyP50Ms()), maxD(a.latencyP75Ms(), b.latencyP75Ms()),
                maxD(a.latencyP90Ms(), b.latencyP90Ms()), maxD(a.latencyP99Ms(), b.latencyP99Ms()),
                maxD(a.serverTimeAvgMs(), b.serverTimeAvgMs()), maxD(a.serverTimeP50Ms(), b.serverTimeP50Ms()),
                maxD(a.serverTimeP75Ms(), b.serverTimeP75Ms()), maxD(a.serverTimeP90Ms(), b.serverTimeP90Ms()),
                maxD(a.serverTimeP99Ms(), b.serverTimeP99Ms()), maxD(a.networkTimeMs(), b.networkTimeMs()));
    }

    // Explicit ifs: a conditional mixing Long and long would unbox a null.
    private static Long min(Long a, Long b) {
        if (a == null || b == null) {
            return a == null ? b : a;
        }
        return Math.min(a, b);
    }

    private static Long max(Long a, Long b) {
        if (a == null || b == null) {
            return a == null ? b : a;
        }
        return Math.max(a, b);
    }

    private static Double maxD(Double a, Double b) {
        if (a == null || b == null) {
            return a == null ? b : a;
        }
        return Math.max(a, b);
    }

    private static Double sum(Double a, Double b) {
        if (a == null || b == null) {
            return a == null ? b : a;
        }
        return a + b;
    }
}
