package io.wattgraph.graph.placement;

import io.wattgraph.graph.analysis.Aggregator;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.model.MetricHistory;
import io.wattgraph.graph.model.MetricHistoryReader;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.springframework.stereotype.Component;

/**
 * A {@link PlacementProblem}'s parts read from the live graph: the workloads of an aggregated graph (with their CPU
 * over the metric history when asked), the traffic between them, and the nodes from the Hosts' capacities.
 */
@Component
public class PlacementInputs {

    private final ServiceGraphLoader loader;
    private final MetricHistoryReader history;

    public PlacementInputs(ServiceGraphLoader loader, MetricHistoryReader history) {
        this.loader = loader;
        this.history = history;
    }

    /** {@code observedCpu}: a workload's CPU over its history, used instead of its latest {@code cpuUsage}. */
    static List<PlacementProblem.Workload> workloadsOf(ServiceGraph graph, Map<String, Double> observedCpu) {
        return workloadsOf(graph, observedCpu, Map.of());
    }

    /** And {@code observedMemory}: its memory over its history, used instead of its latest {@code memoryBytes}. */
    static List<PlacementProblem.Workload> workloadsOf(ServiceGraph graph, Map<String, Double> observedCpu,
                                                       Map<String, Double> observedMemory) {
        List<PlacementProblem.Workload> workloads = new ArrayList<>();
        for (ServiceNode n : graph.nodes()) {
            if (n.external()) {
                continue;
            }
            Metrics m = n.metrics();
            Double usage = observedCpu.getOrDefault(n.id(), m.cpuUsage());
            double cpu = m.cpuRequest() != null ? m.cpuRequest() : usage != null ? usage : 0;
            Double used = observedMemory.getOrDefault(n.id(), m.memoryBytes());
            // The node reserves the request, and the workload uses what it uses: the larger of the two.
            double mem = Math.max(m.memoryRequestBytes() != null ? m.memoryRequestBytes() : 0, used != null ? used : 0);
            String name = n.service() != null && n.id().startsWith("service:") ? n.service()
                    : n.pod() != null ? n.pod() : n.name();
            workloads.add(new PlacementProblem.Workload(n.id(), cpu, mem, n.hostId(), n.namespace(), name));
        }
        return workloads;
    }

    /**
     * Each workload's peak or p95 CPU over the history of its parts, summed per window: at host level the Host's
     * own history when it has one; else a process's container's (once per container), else the process's own.
     * Workloads without any history are absent (their latest {@code cpuUsage} stays).
     */
    Map<String, Double> observedCpu(ServiceGraph processes, Level level, String basis) {
        List<ServiceNode> nodes = processes.nodes().stream().filter(n -> !n.external()).toList();
        Map<String, MetricHistory> hosts = level == Level.HOST
                ? history.read("host", ids(nodes, ServiceNode::hostId)) : new HashMap<>();
        Map<String, MetricHistory> containers = history.read("container", ids(nodes, ServiceNode::containerId));
        Map<String, MetricHistory> own = history.read("process", ids(nodes, ServiceNode::id));
        Map<String, Map<String, MetricHistory>> parts = new HashMap<>();
        for (ServiceNode n : nodes) {
            String key;
            MetricHistory h;
            if (hasWindows(hosts.get(n.hostId()))) {
                key = "host:" + n.hostId();
                h = hosts.get(n.hostId());
            } else if (hasWindows(containers.get(n.containerId()))) {
                key = "container:" + n.containerId();
                h = containers.get(n.containerId());
            } else {
                key = "process:" + n.id();
                h = own.getOrDefault(n.id(), MetricHistory.EMPTY);
            }
            parts.computeIfAbsent(Aggregator.groupId(n, level), g -> new HashMap<>()).put(key, h);
        }
        Map<String, Double> cpu = new HashMap<>();
        parts.forEach((group, p) -> {
            MetricHistory.Summary s = MetricHistory.summary(MetricHistory.summedCpu(p.values()));
            if (s.windows() > 0) {
                cpu.put(group, basis.equals("peak") ? s.max() : s.p95());
            }
        });
        return cpu;
    }

    /**
     * Each workload's memory over the kept windows: the sum over its distinct containers of each one's highest
     * cgroup window peak (memory is not elastic: the peak for either CPU basis). Workloads without a container
     * memory history are absent (their latest {@code memoryBytes} stays).
     */
    Map<String, Double> observedMemory(ServiceGraph processes, Level level) {
        List<ServiceNode> nodes = processes.nodes().stream().filter(n -> !n.external()).toList();
        Map<String, Double> peaks = history.peakMemory(ids(nodes, ServiceNode::containerId));
        Map<String, Set<String>> containers = new HashMap<>();
        for (ServiceNode n : nodes) {
            if (n.containerId() != null && peaks.containsKey(n.containerId())) {
                containers.computeIfAbsent(Aggregator.groupId(n, level), g -> new HashSet<>()).add(n.containerId());
            }
        }
        Map<String, Double> memory = new HashMap<>();
        containers.forEach((group, ids) -> memory.put(group, ids.stream().mapToDouble(peaks::get).sum()));
        return memory;
    }

    private static boolean hasWindows(MetricHistory h) {
        return h != null && !h.windows().isEmpty();
    }

    private static Set<String> ids(List<ServiceNode> nodes, Function<ServiceNode, String> id) {
        Set<String> ids = new HashSet<>();
        for (ServiceNode n : nodes) {
            if (id.apply(n) != null) {
                ids.add(id.apply(n));
            }
        }
        return ids;
    }

    static List<PlacementProblem.Traffic> trafficOf(ServiceGraph graph) {
        Map<String, ServiceNode> byId = graph.nodesById();
        List<PlacementProblem.Traffic> traffic = new ArrayList<>();
        for (ServiceEdge e : graph.edges()) {
            if (!byId.get(e.source()).external() && !byId.get(e.target()).external()
                    && !e.source().equals(e.target())) {
                traffic.add(new PlacementProblem.Traffic(e.source(), e.target(), e.bytes()));
            }
        }
        return traffic;
    }

    List<PlacementProblem.NodeCapacity> nodesFromHosts() {
        List<PlacementProblem.NodeCapacity> nodes = new ArrayList<>();
        for (ServiceGraphLoader.HostCapacity h : loader.hostCapacities()) {
            if (h.cores() != null) {
                nodes.add(new PlacementProblem.NodeCapacity(h.id(), h.cores(),
                        h.memoryBytes() != null ? h.memoryBytes() : Double.MAX_VALUE));
            }
        }
        return nodes;
    }
}
