package io.wattgraph.graph;

import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.model.ServiceNode;
import io.wattgraph.graph.placement.PlacementProblem;
import io.wattgraph.graph.placement.PlacementRequest;
import io.wattgraph.graph.placement.PlacementResult;
import io.wattgraph.graph.placement.PlacementService;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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

    public PlacementController(ServiceGraphService service, ServiceGraphLoader loader) {
        this.service = service;
        this.loader = loader;
    }

    @PostMapping("/placement")
    public PlacementResult place(@RequestBody(required = false) PlacementRequest body) {
        PlacementRequest r = body == null ? new PlacementRequest(null, null, null, null, null, null, null, null) : body;
        String method = RequestParams.oneOf("method", r.method(), "auto",
                PlacementService.METHODS.toArray(String[]::new));
        Level level = RequestParams.level(r.level(), Level.CONTAINER);
        List<PlacementProblem.Workload> workloads = r.workloads();
        List<PlacementProblem.Traffic> traffic = r.traffic();
        if (workloads == null) {
            ServiceGraph graph = service.graph(RequestParams.filter(r.host(), r.namespace(), null, null), level);
            workloads = workloadsOf(graph);
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
        List<PlacementProblem.Workload> workloads = new ArrayList<>();
        for (ServiceNode n : graph.nodes()) {
            if (n.external()) {
                continue;
            }
            Metrics m = n.metrics();
            double cpu = m.cpuRequest() != null ? m.cpuRequest() : m.cpuUsage() != null ? m.cpuUsage() : 0;
            double mem = m.memoryRequestBytes() != null ? m.memoryRequestBytes()
                    : m.memoryBytes() != null ? m.memoryBytes() : 0;
            String name = n.service() != null && n.id().startsWith("service:") ? n.service()
                    : n.pod() != null ? n.pod() : n.name();
            workloads.add(new PlacementProblem.Workload(n.id(), cpu, mem, n.hostId(), n.namespace(), name));
        }
        return workloads;
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
