package io.wattgraph.graph.topology;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.neo4j.driver.Value;
import org.neo4j.driver.types.Entity;
import org.neo4j.driver.types.Node;
import org.springframework.stereotype.Component;

/**
 * Turns TALKS_TO rows into the API's node/edge lists. Nodes are de-duplicated by id and everything is
 * sorted, so the same graph always yields the same JSON (clients can diff it, tests can compare it).
 */
@Component
public class GraphAssembler {

    static final String TALKS_TO = "TALKS_TO";

    public Graph assemble(List<TalksToRow> rows) {
        Map<String, GraphNode> nodes = new TreeMap<>();
        List<GraphEdge> edges = new ArrayList<>(rows.size());
        for (TalksToRow row : rows) {
            String source = addNode(nodes, row.client());
            String target = addNode(nodes, row.server());
            edges.add(new GraphEdge(source, target, TALKS_TO,
                    longOrNull(row.talk(), "bytesClientToServer"),
                    longOrNull(row.talk(), "bytesServerToClient"),
                    longOrNull(row.talk(), "connections"),
                    doubleOrNull(row.talk(), "connectionsEstimated"),
                    longOrNull(row.talk(), "connectionsSampled"),
                    longOrNull(row.talk(), "firstSeenNs"),
                    longOrNull(row.talk(), "lastSeenNs")));
        }
        edges.sort(Comparator.comparing(GraphEdge::source).thenComparing(GraphEdge::target));
        return new Graph(List.copyOf(nodes.values()), List.copyOf(edges));
    }

    private static String addNode(Map<String, GraphNode> nodes, Node node) {
        // Contract ids are unique per node; fall back to the element id so a malformed node stays visible.
        String id = node.get("id").isNull() ? node.elementId() : node.get("id").asString();
        nodes.computeIfAbsent(id, key -> toGraphNode(key, node));
        return id;
    }

    private static GraphNode toGraphNode(String id, Node node) {
        NodeKind kind = NodeKind.of(node)
                .orElseThrow(() -> new IllegalStateException("node " + id + " has no known label"));
        Map<String, Object> properties = new LinkedHashMap<>();
        for (String key : kind.properties()) {
            // Every listed key is present (null when unset) so the JSON shape per kind is stable.
            properties.put(key, node.get(key).asObject());
        }
        return new GraphNode(id, kind, properties);
    }

    private static Double doubleOrNull(Entity entity, String key) {
        Value value = entity.get(key);
        return value.isNull() ? null : value.asDouble();
    }

    private static Long longOrNull(Entity entity, String key) {
        Value value = entity.get(key);
        return value.isNull() ? null : value.asLong();
    }
}
