package io.wattgraph.graph.power;

import io.wattgraph.graph.InvalidParameterException;
import io.wattgraph.graph.RequestParams;
import io.wattgraph.graph.analysis.GraphParams;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.analysis.ServiceGraphService;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.springframework.stereotype.Service;

/**
 * The one budget computation behind both {@code POST /api/v1/power/budgets} and the periodic
 * {@link BudgetPublisher}: validates a {@link PowerRequest}, reads the live graph and runs HyPPO
 * (PowerThesis Eq. 4.1/4.2) or PRESTO (PowerThesis Eq. 5.1–5.9). The publisher additionally derives the hosts'
 * power state from the graph ({@link #liveHosts}).
 */
@Service
public class PowerBudgetService {

    /** P of PowerThesis Eq. 4.2 when the request does not give one, W per core (PowerThesis' value). */
    public static final double DEFAULT_P = 10.0;

    private final ServiceGraphService service;
    private final ServiceGraphLoader loader;

    public PowerBudgetService(ServiceGraphService service, ServiceGraphLoader loader) {
        this.service = service;
        this.loader = loader;
    }

    /**
     * A computed set of budgets.
     *
     * @param policy hyppo or presto
     * @param budgets one per requested host, in request order
     * @param response what {@code POST /api/v1/power/budgets} answers (PRESTO's full result, or HyPPO's)
     */
    public record Computation(String policy, List<Budget> budgets, Object response) {
    }

    /** Validates the request (400s name the parameter) and computes the budgets from the live graph. */
    public Computation compute(PowerRequest r) {
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
            ServiceGraph graph = service.graph(GraphParams.filter(null, namespace, null, null),
                    GraphParams.level(r.level(), Level.POD));
            try {
                Presto.Result result = service.timed("power_presto",
                        () -> Presto.compute(graph, r.entryPoint(), r.slaMs(), hosts));
                return new Computation(policy, result.budgets(), result);
            } catch (IllegalArgumentException e) {
                throw new InvalidParameterException("entryPoint", e.getMessage());
            }
        }
        double p = r.proportionalWattsPerCore() == null ? DEFAULT_P : r.proportionalWattsPerCore();
        List<Hyppo.ContainerPower> containers = r.containers();
        if (containers == null) {
            ServiceGraph graph = service.graph(GraphParams.filter(null, namespace, null, null), Level.CONTAINER);
            containers = containerPowers(graph);
        }
        List<Hyppo.ContainerPower> input = containers;
        List<Budget> budgets = service.timed("power_hyppo", () -> Hyppo.budgets(hosts, input, p));
        return new Computation(policy, budgets,
                Map.of("policy", "hyppo", "proportionalWattsPerCore", p, "budgets", budgets));
    }

    /** HyPPO's inputs from the container-level graph: each Container's powerW, cpuUsage and cpuRequest. */
    public static List<Hyppo.ContainerPower> containerPowers(ServiceGraph containerLevel) {
        List<Hyppo.ContainerPower> containers = new ArrayList<>();
        for (ServiceNode n : containerLevel.nodes()) {
            if (!n.external() && n.hostId() != null && n.metrics().powerW() != null) {
                containers.add(new Hyppo.ContainerPower(n.hostId(), n.id(), n.metrics().powerW(),
                        n.metrics().cpuUsage(), n.metrics().cpuRequest()));
            }
        }
        return containers;
    }

    /** A host's configured bounds (and optionally its idle power), W. */
    public record Bounds(double minW, double maxW, Double idleW) {
    }

    /**
     * The power state of every host the publisher budgets: the graph's Host nodes and the hosts of its
     * processes, plus every host with configured bounds. A host without configured bounds takes
     * {@code defaults}, or is left out when there are none.
     * <ul>
     *   <li>currentPowerW: the host-level {@code powerW} (the Host's own property, else the sum of its
     *       processes'), null when unknown;</li>
     *   <li>actionablePowerW: the sum of its containers' {@code powerW} (what the policies act on);</li>
     *   <li>idlePowerW: the configured idle power, else the Host's {@code idlePowerW} property, else
     *       current − actionable (floored at 0) when the current power is known.</li>
     * </ul>
     */
    public List<HostPower> liveHosts(Map<String, Bounds> configured, Bounds defaults) {
        ServiceGraphLoader.Loaded loaded = service.load(GraphFilter.NONE);
        ServiceGraph hostLevel = service.aggregate(loaded, Level.HOST);
        ServiceGraph containerLevel = service.aggregate(loaded, Level.CONTAINER);
        Map<String, Double> current = new HashMap<>();
        TreeSet<String> ids = new TreeSet<>(configured.keySet());
        loaded.groupMetrics().forEach((group, m) -> {
            if (group.startsWith("host:")) {
                String id = group.substring("host:".length());
                ids.add(id);
                if (m.powerW() != null) {
                    current.put(id, m.powerW());
                }
            }
        });
        for (ServiceNode n : hostLevel.nodes()) {
            if (!n.external() && n.hostId() != null) {
                ids.add(n.hostId());
                Metrics m = n.metrics();
                if (m.powerW() != null) {
                    current.put(n.hostId(), m.powerW());
                }
            }
        }
        Map<String, Double> hostIdle = loader.hostIdlePowers();
        Map<String, Double> actionable = new LinkedHashMap<>();
        for (Hyppo.ContainerPower c : containerPowers(containerLevel)) {
            actionable.merge(c.host(), c.powerW(), Double::sum);
        }
        List<HostPower> hosts = new ArrayList<>();
        for (String id : ids) {
            Bounds b = configured.getOrDefault(id, defaults);
            if (b == null) {
                continue;
            }
            Double cur = current.get(id);
            Double act = actionable.get(id);
            Double idle = b.idleW() != null ? b.idleW() : hostIdle.get(id) != null ? hostIdle.get(id)
                    : cur != null ? Math.max(0, cur - (act == null ? 0 : act)) : null;
            hosts.add(new HostPower(id, cur, act, idle, b.minW(), b.maxW()));
        }
        return hosts;
    }
}
