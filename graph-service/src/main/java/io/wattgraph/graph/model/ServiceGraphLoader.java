package io.wattgraph.graph.model;

import io.wattgraph.graph.Neo4jReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.neo4j.driver.Record;
import org.neo4j.driver.Value;
import org.neo4j.driver.exceptions.value.Uncoercible;
import org.neo4j.driver.types.MapAccessor;
import org.neo4j.driver.types.Node;
import org.neo4j.driver.types.Relationship;
import org.springframework.stereotype.Component;

/**
 * Builds the process-level {@link ServiceGraph} from Neo4j: TALKS_TO edges with their Process/External
 * endpoints, plus the Kubernetes properties and metrics of Containers and the capacities of Hosts. Every
 * query is a constant; filters are parameters. Metric property names: see README "Metric properties".
 */
@Component
public class ServiceGraphLoader {

    private static final String EDGES = """
            MATCH (client:Process|External)-[talk:TALKS_TO]->(server:Process|External)
            WHERE ($fromNs IS NULL OR talk.lastSeenNs >= $fromNs)
              AND ($toNs IS NULL OR talk.firstSeenNs <= $toNs)
              AND ($host IS NULL OR client.hostId = $host OR server.hostId = $host)
            RETURN client, talk, server
            """;

    private static final String CONTAINERS = "MATCH (c:Container) RETURN c";

    private static final String HOSTS = "MATCH (h:Host) RETURN h";

    private final Neo4jReader reader;

    public ServiceGraphLoader(Neo4jReader reader) {
        this.reader = reader;
    }

    /** A process-level graph and the measured metrics of groups (containers, hosts), keyed by group id. */
    public record Loaded(ServiceGraph graph, Map<String, Metrics> groupMetrics) {
    }

    public Loaded load(GraphFilter filter) {
        Map<String, Object> params = new HashMap<>();
        params.put("host", filter.host());
        params.put("fromNs", filter.fromNs());
        params.put("toNs", filter.toNs());
        List<Record> rows = reader.read("service_graph_edges", EDGES, params, r -> r);
        List<Node> containers = reader.read("service_graph_containers", CONTAINERS, Map.of(), r -> r.get("c").asNode());
        List<Node> hosts = reader.read("service_graph_hosts", HOSTS, Map.of(), r -> r.get("h").asNode());

        Map<String, Metrics> groupMetrics = new HashMap<>();
        Map<String, Double> hostCores = new HashMap<>();
        for (Node h : hosts) {
            String id = string(h, "id");
            hostCores.put(id, dbl(h, "cores"));
            groupMetrics.put("host:" + id, metrics(h));
        }
        Map<String, Node> containerById = new HashMap<>();
        for (Node c : containers) {
            containerById.put(string(c, "id"), c);
            groupMetrics.put("container:" + string(c, "id"), metrics(c));
        }

        Map<String, ServiceNode> nodes = new LinkedHashMap<>();
        List<ServiceEdge> edges = new ArrayList<>();
        for (Record r : rows) {
            String source = addNode(nodes, r.get("client").asNode(), hostCores, containerById);
            String target = addNode(nodes, r.get("server").asNode(), hostCores, containerById);
            Relationship t = r.get("talk").asRelationship();
            edges.add(new ServiceEdge(source, target, lng(t, "bytesClientToServer"), lng(t, "bytesServerToClient"),
                    lng(t, "connections"), lngOrNull(t, "firstSeenNs"), lngOrNull(t, "lastSeenNs"),
                    dbl(t, "requestRate"), dbl(t, "latencyAvgMs"), dbl(t, "latencyP50Ms"), dbl(t, "latencyP75Ms"),
                    dbl(t, "latencyP90Ms"), dbl(t, "latencyP99Ms")));
        }
        ServiceGraph graph = new ServiceGraph(List.copyOf(nodes.values()), edges);
        if (filter.namespace() != null) {
            graph = keepNamespace(graph, filter.namespace());
        }
        return new Loaded(graph, groupMetrics);
    }

    /** Hosts with their capacity properties {@code cores} and {@code memoryBytes} (null when not written). */
    public record HostCapacity(String id, Double cores, Double memoryBytes) {
    }

    public List<HostCapacity> hostCapacities() {
        return reader.read("host_capacities", HOSTS, Map.of(), r -> {
            Node h = r.get("h").asNode();
            return new HostCapacity(string(h, "id"), dbl(h, "cores"), dbl(h, "memoryBytes"));
        });
    }

    static ServiceGraph keepNamespace(ServiceGraph graph, String namespace) {
        Map<String, ServiceNode> byId = graph.nodesById();
        List<ServiceEdge> edges = graph.edges().stream()
                .filter(e -> namespace.equals(byId.get(e.source()).namespace())
                        || namespace.equals(byId.get(e.target()).namespace()))
                .toList();
        java.util.Set<String> kept = new java.util.HashSet<>();
        edges.forEach(e -> {
            kept.add(e.source());
            kept.add(e.target());
        });
        List<ServiceNode> nodes = graph.nodes().stream().filter(n -> kept.contains(n.id())).toList();
        return new ServiceGraph(nodes, edges);
    }

    private static String addNode(Map<String, ServiceNode> nodes, Node node, Map<String, Double> hostCores,
                                  Map<String, Node> containers) {
        String id = node.get("id").isNull() ? node.elementId() : node.get("id").asString();
        nodes.computeIfAbsent(id, key -> {
            if (!node.hasLabel("Process")) {
                return ServiceNode.external(key);
            }
            String hostId = string(node, "hostId");
            String containerId = string(node, "containerId");
            ServiceNode p = ServiceNode.process(key, string(node, "comm"), hostId, containerId,
                    ProcessTypes.of(string(node, "cmdline"), string(node, "comm")),
                    hostId == null ? null : hostCores.get(hostId), metrics(node));
            Node c = containerId == null ? null : containers.get(containerId);
            return c == null ? p : p.withKubernetes(string(c, "pod"), string(c, "namespace"), string(c, "service"));
        });
        return id;
    }

    static Metrics metrics(MapAccessor e) {
        return new Metrics(dbl(e, "cpuUsage"), dbl(e, "threads"), dbl(e, "requestRate"), dbl(e, "latencyAvgMs"),
                dbl(e, "latencyP50Ms"), dbl(e, "latencyP75Ms"), dbl(e, "latencyP90Ms"), dbl(e, "latencyP99Ms"),
                dbl(e, "powerW"), dbl(e, "memoryBytes"), dbl(e, "cpuRequest"), dbl(e, "memoryRequestBytes"),
                dbl(e, "serviceTimeMs"));
    }

    private static String string(MapAccessor e, String key) {
        Value v = e.get(key);
        return v.isNull() ? null : v.asObject().toString();
    }

    private static Double dbl(MapAccessor e, String key) {
        Value v = e.get(key);
        if (v.isNull()) {
            return null;
        }
        try {
            return v.asNumber().doubleValue();
        } catch (Uncoercible wrongType) {
            return null; // a property of the wrong type is treated as absent
        }
    }

    private static long lng(MapAccessor e, String key) {
        Value v = e.get(key);
        return v.isNull() ? 0L : v.asLong();
    }

    private static Long lngOrNull(MapAccessor e, String key) {
        Value v = e.get(key);
        return v.isNull() ? null : v.asLong();
    }
}
