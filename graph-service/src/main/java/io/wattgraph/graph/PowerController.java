package io.wattgraph.graph;

import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import io.wattgraph.graph.power.Budget;
import io.wattgraph.graph.power.HostPower;
import io.wattgraph.graph.power.Hyppo;
import io.wattgraph.graph.power.PowerRequest;
import io.wattgraph.graph.power.Presto;
import io.wattgraph.graph.power.PrestoSimulation;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /api/v1/power/budgets}: per-host power budgets for the next period, HyPPO (CPU-request driven)
 * or PRESTO (latency-SLA driven). A computation only: nothing is published yet.
 */
@RestController
@RequestMapping("/api/v1/power")
public class PowerController {

    static final double DEFAULT_P = 10.0;

    private final ServiceGraphService service;

    public PowerController(ServiceGraphService service) {
        this.service = service;
    }

    @PostMapping("/budgets")
    public Object budgets(@RequestBody(required = false) PowerRequest r) {
        if (r == null) {
            throw new InvalidParameterException("body", "must be a JSON object with at least 'policy' and 'hosts'");
        }
        String policy = RequestParams.oneOf("policy", r.policy(), null, "hyppo", "presto");
        if (policy == null) {
            throw new InvalidParameterException("policy", "is required: hyppo or presto");
        }
        List<HostPower> hosts = r.hosts();
        if (hosts == null || hosts.isEmpty()) {
            throw new InvalidParameterException("hosts", "must list the hosts with their power bounds");
        }
        for (HostPower h : hosts) {
            if (h.host() == null || !(h.minW() >= 0) || !(h.maxW() >= h.minW())) {
                throw new InvalidParameterException("hosts", "every host needs an id and 0 <= minW <= maxW");
            }
        }
        String namespace = r.namespace();
        if (policy.equals("presto")) {
            if (r.slaMs() == null || !(r.slaMs() > 0)) {
                throw new InvalidParameterException("slaMs", "must be a positive latency target in ms");
            }
            ServiceGraph graph = service.graph(RequestParams.filter(null, namespace, null, null),
                    RequestParams.level(r.level(), Level.POD));
            try {
                return service.timed("power_presto", () -> Presto.compute(graph, r.entryPoint(), r.slaMs(), hosts));
            } catch (IllegalArgumentException e) {
                throw new InvalidParameterException("entryPoint", e.getMessage());
            }
        }
        double p = r.proportionalWattsPerCore() == null ? DEFAULT_P : r.proportionalWattsPerCore();
        List<Hyppo.ContainerPower> containers = r.containers();
        if (containers == null) {
            ServiceGraph graph = service.graph(RequestParams.filter(null, namespace, null, null), Level.CONTAINER);
            containers = new ArrayList<>();
            for (ServiceNode n : graph.nodes()) {
                if (!n.external() && n.hostId() != null && n.metrics().powerW() != null) {
                    containers.add(new Hyppo.ContainerPower(n.hostId(), n.id(), n.metrics().powerW(),
                            n.metrics().cpuUsage(), n.metrics().cpuRequest()));
                }
            }
        }
        List<Hyppo.ContainerPower> input = containers;
        List<Budget> budgets = service.timed("power_hyppo", () -> Hyppo.budgets(hosts, input, p));
        return Map.of("policy", "hyppo", "proportionalWattsPerCore", p, "budgets", budgets);
    }

    /**
     * {@code GET /api/v1/power/simulation}: the PRESTO closed-loop simulation (low, mid, high arrival rates on
     * Fig. 5.4's queueing model; see {@link PrestoSimulation}), to compare with the thesis' Table 5.2.
     */
    @GetMapping("/simulation")
    public Object simulation(@RequestParam(name = "seed", required = false) String seed,
                             @RequestParam(name = "sequentialCalls", required = false) String sequential) {
        long s;
        try {
            s = seed == null ? 42L : Long.parseLong(seed);
        } catch (NumberFormatException e) {
            throw new InvalidParameterException("seed", "must be an integer");
        }
        String seq = RequestParams.oneOf("sequentialCalls", sequential, "false", "true", "false");
        List<PrestoSimulation.Outcome> rows = service.timed("power_simulation",
                () -> PrestoSimulation.table(s, seq.equals("true")));
        return Map.of("seed", s, "sequentialCalls", seq.equals("true"), "rows", rows,
                "table", PrestoSimulation.format(rows));
    }
}
