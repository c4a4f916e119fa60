package io.wattgraph.graph.placement;

import io.wattgraph.graph.InvalidParameterException;
import io.wattgraph.graph.RequestParams;
import io.wattgraph.graph.analysis.GraphParams;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.analysis.ServiceGraphService;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.ServiceGraph;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /api/v1/placement}: a placement recommendation (BlackBox §7.4), see {@link PlacementService}. */
@RestController
@RequestMapping("/api/v1")
public class PlacementController {

    private final ServiceGraphService service;
    private final PlacementInputs inputs;

    public PlacementController(ServiceGraphService service, PlacementInputs inputs) {
        this.service = service;
        this.inputs = inputs;
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
            if (basis.equals("latest")) {
                workloads = PlacementInputs.workloadsOf(graph, Map.of());
            } else {
                ServiceGraph processes = service.graph(filter, Level.PROCESS);
                workloads = PlacementInputs.workloadsOf(graph, inputs.observedCpu(processes, level, basis),
                        inputs.observedMemory(processes, level));
            }
            if (traffic == null) {
                traffic = PlacementInputs.trafficOf(graph);
            }
        }
        List<PlacementProblem.NodeCapacity> nodes = r.nodes() != null ? r.nodes() : inputs.nodesFromHosts();
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
}
