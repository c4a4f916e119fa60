package io.wattgraph.graph.placement;

import io.wattgraph.graph.InvalidParameterException;
import io.wattgraph.graph.RequestParams;
import io.wattgraph.graph.analysis.Aggregator;
import io.wattgraph.graph.analysis.GraphParams;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.analysis.ServiceGraphService;
import io.wattgraph.graph.model.GraphFilter;
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
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /api/v1/placement}: a placement recommendation (003 §7.4), see {@link PlacementService}. */
@RestController
@RequestMapping("/api/v1")
public class PlacementController {

    private final ServiceGraphService service;
    private final ServiceGraphLoader loader;
    private final MetricHistoryReader history;

    public PlacementController(ServiceGraphService service, ServiceGraphLoader loader, MetricHistoryReader history) {
        this.service = service;
        this.loader = loader;
        this.history = history;
    }

    @PostMapping("/placement")
    public PlacementResult place(@RequestBody(required = false) PlacementRequest body) {
        PlacementRequest r = body == null
                ? new PlacementRequest(null, null, null, null, null, null, null, null, null) : body;
        String method = RequestParams.oneOf("method", r.method(), "auto",
                PlacementService.METHODS.toArray(String[]::new));
        String basis = RequestParams.oneOf("cpuBasis", r.cpuBasis(), "latest", "latest", "peak", "p95");
        Level level = GraphParams.level(r.level(), Level.CONTAINER);
        List<PlacementProblem.Workload> workloads = r.workloads();
        List<PlacementProblem.Traffic> traffic = r.traffic();
        if (workloads == null) {
            GraphFilter filter = GraphParams.filter(r.host(), r.namespace(), null, null);
            ServiceGraph graph = service.graph(filter, level);
            workloads = workloadsOf(graph, basis.equals("latest") ? Map.of()
                    : observedCpu(service.graph(filter, Level.PROCESS), level, basis));
            if (traffic == null) {
                traffic = trafficOf(graph);
            }
        }
        List<PlacementProblem.NodeCapacity> nodes = r.nodes() != null ? r.nodes() : nodesFromHosts();
        if (nodes.isEmpty()) {
            throw new InvalidParameterException("nodes", "no Host has a 'cores' property; give the nodes in the request");
        }
        PlacementProblem problem = new PlacementProblem(workloads, nodes, traffic == null ? List.of() : traffic,
                r.nodeWeight());
        try {
            return service.timed("placement_" + method, () -> PlacementService.solve(problem, method));
        } catch (IllegalArgumentException e) {
            throw new InvalidParameterException("body", e.getMessage());
        }
    }

    static List<PlacementProblem.Workload> workloadsOf(ServiceGraph graph) {
        return workloadsOf(graph, Map.of());
    }

    /** {@code observedCpu}: a workload's CPU over its history, used instead of its latest {@code cpuUsage}. */
    static List<PlacementProblem.Workload> workloadsOf(ServiceGraph graph, Map<String, Double> observedCpu) {
        List<PlacementProblem.Workload> workloads = new ArrayList<>();
        for (ServiceNode n : graph.nodes()) {
            if (n.external()) {
                continue;
            }
            Metrics m = n.metrics();
            Double usage = observedCpu.getOrDefault(n.id(), m.cpuUsage());
            double cpu = m.cpuRequest() != null ? m.cpuRequest() : usage != null ? usage : 0;
            double mem = m.memoryRequestBytes() != null ? m.memoryRequestBytes()
                    : m.memoryBytes() != null ? m.memoryBytes() : 0;
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

    private List<PlacementProblem.NodeCapacity> nodesFromHosts() {
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
