package io.wattgraph.graph.model;

import io.wattgraph.graph.neo4j.Neo4jReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * query is a constant; filters are parameters. Metric property names: see docs/graph-model.md.
 */
@Component
public class ServiceGraphLoader {

    // The queries are public for GraphServiceBenchmark's per-query profile; they take no request input.
    public static final String EDGES = """
            MATCH (client:Process|External)-[talk:TALKS_TO]->(server:Process|External)
            WHERE ($fromNs IS NULL OR talk.lastSeenNs >= $fromNs)
              AND ($toNs IS NULL OR talk.firstSeenNs <= $toNs)
              AND ($host IS NULL OR client.hostId = $host OR server.hostId = $host)
            RETURN client, talk, server
            """;

    private static final String CONTAINERS = "MATCH (c:Container) RETURN c";

    private static final String HOSTS = "MATCH (h:Host) RETURN h";

    /**
     * The metric columns of Process, Container and Host nodes, in {@link #metrics(Record, int)}'s order. Latencies:
     * the node's own {@code latency*Ms}, else the stream job's server time ({@code serverTime*Ns}) in ms.
     */
    public static String metricsOf(String v) {
        return v + ".cpuUsage, " + v + ".threads, " + v + ".requestRate, "
                + msOr(v, "latencyAvgMs", "serverTimeMeanNs") + ", " + msOr(v, "latencyP50Ms", "serverTimeP50Ns") + ", "
                + msOr(v, "latencyP75Ms", "serverTimeP75Ns") + ", " + msOr(v, "latencyP90Ms", "serverTimeP90Ns") + ", "
                + msOr(v, "latencyP99Ms", "serverTimeP99Ns") + ", " + v + ".powerW, " + v + ".memoryBytes, "
                + v + ".cpuRequest, " + v + ".memoryRequestBytes, " + v + ".serviceTimeMs, " + v + ".utilization";
    }

    private static String msOr(String v, String msProperty, String nsProperty) {
        return "coalesce(" + v + "." + msProperty + ", " + v + "." + nsProperty + " / 1e6)";
    }

    /*
     * load(): only the properties the model uses, one compact row per edge (endpoint ids, no node payload) and
     * one per process, container and host, in one read transaction.
     */
    public static final String EDGES_COMPACT = """
            MATCH (client:Process|External)-[talk:TALKS_TO]->(server:Process|External)
            WHERE ($fromNs IS NULL OR talk.lastSeenNs >= $fromNs)
              AND ($toNs IS NULL OR talk.firstSeenNs <= $toNs)
              AND ($host IS NULL OR client.hostId = $host OR server.hostId = $host)
            RETURN coalesce(client.id, elementId(client)), coalesce(server.id, elementId(server)),
                   talk.bytesClientToServer, talk.bytesServerToClient, talk.connections, talk.firstSeenNs,
                   talk.lastSeenNs, talk.requestRate, coalesce(talk.latencyAvgMs, talk.clientRttMeanNs / 1e6),
                   coalesce(talk.latencyP50Ms, talk.clientRttP50Ns / 1e6),
                   coalesce(talk.latencyP75Ms, talk.clientRttP75Ns / 1e6),
                   coalesce(talk.latencyP90Ms, talk.clientRttP90Ns / 1e6),
                   coalesce(talk.latencyP99Ms, talk.clientRttP99Ns / 1e6), talk.serverTimeMeanNs / 1e6,
                   talk.serverTimeP50Ns / 1e6, talk.serverTimeP75Ns / 1e6, talk.serverTimeP90Ns / 1e6,
                   talk.serverTimeP99Ns / 1e6, talk.networkTimeMeanNs / 1e6, talk.connectionsEstimated,
                   talk.connectionsSampled, client:Process, server:Process
            """;

    private static final String PROCESS_COLUMNS = """
            RETURN coalesce(p.id, elementId(p)), p.hostId, p.comm, p.cmdline, p.containerId,
            """ + metricsOf("p");

    /** Processes: with a host filter only those of the host or talking to one of its processes. */
    public static final String PROCESSES_COMPACT = """
            MATCH (p:Process)
            WHERE $host IS NULL OR p.hostId = $host OR EXISTS { (p)-[:TALKS_TO]-(:Process {hostId: $host}) }
            """ + PROCESS_COLUMNS;

    /** Processes by id: the endpoints of edges written after {@link #PROCESSES_COMPACT} ran. */
    static final String PROCESSES_BY_ID = """
            MATCH (p:Process)
            WHERE coalesce(p.id, elementId(p)) IN $ids
            """ + PROCESS_COLUMNS;

    /**
     * Pod, namespace and service columns of Container {@code c}: as configured on the node (pod, namespace), else as
     * the stream job writes them from the agents' pod metadata (podName, podNamespace); the service, else the pod's
     * app label.
     */
    public static String kubernetesOf(String c) {
        return "coalesce(" + c + ".pod, " + c + ".podName), coalesce(" + c + ".namespace, " + c + ".podNamespace), "
                + "coalesce(" + c + ".service, "
                + "[l IN coalesce(" + c + ".podLabels, []) WHERE l STARTS WITH 'app=' | substring(l, 4)][0], "
                + "[l IN coalesce(" + c + ".podLabels, []) WHERE l STARTS WITH 'app.kubernetes.io/name=' "
                + "| substring(l, 23)][0])";
    }

    public static final String CONTAINERS_COMPACT = "MATCH (c:Container) RETURN c.id, " + kubernetesOf("c") + ", "
            + metricsOf("c");

    public static final String HOSTS_COMPACT = "MATCH (h:Host) RETURN h.id, h.cores, " + metricsOf("h");

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
        return reader.readAll("service_graph", tx -> {
            Map<String, Metrics> groupMetrics = new HashMap<>();
            Map<String, Double> hostCores = new HashMap<>();
            for (Record r : tx.run(HOSTS_COMPACT).list()) {
                String id = string(r.get(0));
                hostCores.put(id, dbl(r.get(1)));
                groupMetrics.put("host:" + id, metrics(r, 2));
            }
            Map<String, String[]> kubernetes = new HashMap<>();
            for (Record r : tx.run(CONTAINERS_COMPACT).list()) {
                String id = string(r.get(0));
                kubernetes.put(id, new String[] {string(r.get(1)), string(r.get(2)), string(r.get(3))});
                groupMetrics.put("container:" + id, metrics(r, 4));
            }
            Map<String, ServiceNode> processes = new HashMap<>();
            for (Record r : tx.run(PROCESSES_COMPACT, params).list()) {
                addProcess(r, hostCores, kubernetes, processes);
            }
            List<Record> edgeRows = tx.run(EDGES_COMPACT, params).list();
            // Each query sees what was committed when it started (Neo4j isolates statements, not the transaction):
            // an edge written after the processes were read may end at a process not read yet, never an External.
            Set<String> late = new LinkedHashSet<>();
            for (Record r : edgeRows) {
                for (int end = 0; end < 2; end++) {
                    String id = string(r.get(end));
                    if (r.get(21 + end).asBoolean(false) && !processes.containsKey(id)) {
                        late.add(id);
                    }
                }
            }
            if (!late.isEmpty()) {
                for (Record r : tx.run(PROCESSES_BY_ID, Map.of("ids", List.copyOf(late))).list()) {
                    addProcess(r, hostCores, kubernetes, processes);
                }
            }
            Map<String, ServiceNode> nodes = new LinkedHashMap<>();
            List<ServiceEdge> edges = new ArrayList<>();
            for (Record r : edgeRows) {
                String source = string(r.get(0));
                String target = string(r.get(1));
                nodes.computeIfAbsent(source, id -> processes.getOrDefault(id, ServiceNode.external(id)));
                nodes.computeIfAbsent(target, id -> processes.getOrDefault(id, ServiceNode.external(id)));
                long connections = lng(r.get(4));
                edges.add(new ServiceEdge(source, target, lng(r.get(2)), lng(r.get(3)), connections,
                        ServiceEdge.connectionsEstimated(dbl(r.get(19)), connections), lngOr0(r.get(20)),
                        lngOrNull(r.get(5)), lngOrNull(r.get(6)), dbl(r.get(7)), dbl(r.get(8)), dbl(r.get(9)),
                        dbl(r.get(10)), dbl(r.get(11)), dbl(r.get(12)), dbl(r.get(13)), dbl(r.get(14)),
                        dbl(r.get(15)), dbl(r.get(16)), dbl(r.get(17)), dbl(r.get(18))));
            }
            ServiceGraph graph = new ServiceGraph(List.copyOf(nodes.values()), edges);
            if (filter.namespace() != null) {
                graph = keepNamespace(graph, filter.namespace());
            }
            return new Loaded(graph, groupMetrics);
        });
    }

    private static void addProcess(Record r, Map<String, Double> hostCores, Map<String, String[]> kubernetes,
                                   Map<String, ServiceNode> processes) {
        String id = string(r.get(0));
        String hostId = string(r.get(1));
        String comm = string(r.get(2));
        String containerId = string(r.get(4));
        ServiceNode p = ServiceNode.process(id, comm, hostId, containerId, ProcessTypes.of(string(r.get(3)), comm),
                hostId == null ? null : hostCores.get(hostId), metrics(r, 5));
        String[] k8s = containerId == null ? null : kubernetes.get(containerId);
        processes.put(id, k8s == null ? p : p.withKubernetes(k8s[0], k8s[1], k8s[2]));
    }

    /**
     * The first implementation of {@link #load}, kept for the benchmark's side-by-side comparison and the
     * equivalence test: one row per edge carrying both endpoint nodes with all their properties (each node
     * repeated once per edge), plus every Container and Host node, in three transactions.
     */
    public Loaded loadRowPerEdge(GraphFilter filter) {
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
            long connections = lng(t, "connections");
            edges.add(new ServiceEdge(source, target, lng(t, "bytesClientToServer"), lng(t, "bytesServerToClient"),
                    connections, ServiceEdge.connectionsEstimated(dbl(t, "connectionsEstimated"), connections),
                    lngOr0(t.get("connectionsSampled")), lngOrNull(t, "firstSeenNs"), lngOrNull(t, "lastSeenNs"),
                    dbl(t, "requestRate"), ms(t, "latencyAvgMs", "clientRttMeanNs"), ms(t, "latencyP50Ms", "clientRttP50Ns"),
                    ms(t, "latencyP75Ms", "clientRttP75Ns"), ms(t, "latencyP90Ms", "clientRttP90Ns"),
                    ms(t, "latencyP99Ms", "clientRttP99Ns"), ms(t, null, "serverTimeMeanNs"),
                    ms(t, null, "serverTimeP50Ns"), ms(t, null, "serverTimeP75Ns"), ms(t, null, "serverTimeP90Ns"),
                    ms(t, null, "serverTimeP99Ns"), ms(t, null, "networkTimeMeanNs")));
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

    /** Each Host's {@code idlePowerW} (written by stream-jobs from the agent's idle share), when it has one. */
    public Map<String, Double> hostIdlePowers() {
        Map<String, Double> idle = new HashMap<>();
        for (Node h : reader.read("host_idle_power", HOSTS, Map.of(), r -> r.get("h").asNode())) {
            Double w = dbl(h, "idlePowerW");
            if (w != null && string(h, "id") != null) {
                idle.put(string(h, "id"), w);
            }
        }
        return idle;
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
            return c == null ? p : p.withKubernetes(first(string(c, "pod"), string(c, "podName")),
                    first(string(c, "namespace"), string(c, "podNamespace")),
                    first(string(c, "service"), label(c, "app"), label(c, "app.kubernetes.io/name")));
        });
        return id;
    }

    static Metrics metrics(MapAccessor e) {
        return new Metrics(dbl(e, "cpuUsage"), dbl(e, "threads"), dbl(e, "requestRate"),
                ms(e, "latencyAvgMs", "serverTimeMeanNs"), ms(e, "latencyP50Ms", "serverTimeP50Ns"),
                ms(e, "latencyP75Ms", "serverTimeP75Ns"), ms(e, "latencyP90Ms", "serverTimeP90Ns"),
                ms(e, "latencyP99Ms", "serverTimeP99Ns"), dbl(e, "powerW"), dbl(e, "memoryBytes"),
                dbl(e, "cpuRequest"), dbl(e, "memoryRequestBytes"), dbl(e, "serviceTimeMs"), dbl(e, "utilization"));
    }

    /** {@code msProperty} when set (whatever its type, as {@code coalesce} in the compact queries), else {@code nsProperty} in ms. */
    private static Double ms(MapAccessor e, String msProperty, String nsProperty) {
        if (msProperty != null && !e.get(msProperty).isNull()) {
            return dbl(e, msProperty);
        }
        Double ns = dbl(e, nsProperty);
        return ns == null ? null : ns / 1e6;
    }

    /** How many columns {@link #metricsOf} gives. */
    public static final int METRIC_COLUMNS = 14;

    /** The 14 metric columns starting at {@code first}, in {@link #metricsOf}' order. */
    public static Metrics metrics(Record r, int first) {
        Double[] v = new Double[METRIC_COLUMNS];
        for (int i = 0; i < v.length; i++) {
            v[i] = dbl(r.get(first + i));
        }
        return new Metrics(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12],
                v[13]);
    }

    private static String first(String... values) {
        for (String v : values) {
            if (v != null) {
                return v;
            }
        }
        return null;
    }

    /** A pod label of a Container node ({@code podLabels}: "key=value" strings). */
    private static String label(Node c, String key) {
        Value labels = c.get("podLabels");
        if (labels.isNull()) {
            return null;
        }
        for (Object l : labels.asList()) {
            String s = String.valueOf(l);
            if (s.startsWith(key + "=")) {
                return s.substring(key.length() + 1);
            }
        }
        return null;
    }

    private static String string(MapAccessor e, String key) {
        return string(e.get(key));
    }

    public static String string(Value v) {
        return v.isNull() ? null : v.asObject().toString();
    }

    private static Double dbl(MapAccessor e, String key) {
        return dbl(e.get(key));
    }

    /** A number, or null when absent or of the wrong type. */
    public static Double dbl(Value v) {
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
        return lng(e.get(key));
    }

    private static long lng(Value v) {
        return v.isNull() ? 0L : v.asLong();
    }

    /** A count the stream job may not have written (older edges), or of the wrong type: 0. */
    private static long lngOr0(Value v) {
        if (v.isNull()) {
            return 0L;
        }
        try {
            return v.asLong();
        } catch (Uncoercible wrongType) {
            return 0L;
        }
    }

    private static Long lngOrNull(MapAccessor e, String key) {
        return lngOrNull(e.get(key));
    }

    public static Long lngOrNull(Value v) {
        return v.isNull() ? null : v.asLong();
    }
}
