package io.wattgraph.graph.model;

import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The explicit input model of every analysis: nodes with metrics, client-to-server edges with traffic and
 * request metrics. Built from Neo4j by {@code ServiceGraphLoader} or directly by tests; aggregation maps a
 * graph to another graph of the same type. Nodes are sorted by id, edges by (source, target).
 */
public record ServiceGraph(List<ServiceNode> nodes, List<ServiceEdge> edges) {

    public ServiceGraph {
        nodes = nodes.stream().sorted(Comparator.comparing(ServiceNode::id)).toList();
        edges = edges.stream().sorted(Comparator.comparing(ServiceEdge::source).thenComparing(ServiceEdge::target))
                .toList();
    }

    public Map<String, ServiceNode> nodesById() {
        Map<String, ServiceNode> byId = new LinkedHashMap<>();
        nodes.forEach(n -> byId.put(n.id(), n));
        return byId;
    }
}
