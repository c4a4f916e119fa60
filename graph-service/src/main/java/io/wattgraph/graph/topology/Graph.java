package io.wattgraph.graph.topology;

import java.util.List;

/** The JSON body of {@code GET /api/v1/graph}: nodes sorted by id, edges by (source, target). */
public record Graph(List<GraphNode> nodes, List<GraphEdge> edges) {
}
