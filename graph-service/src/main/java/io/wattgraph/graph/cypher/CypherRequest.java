package io.wattgraph.graph.cypher;

import java.util.Map;

/** Body of {@code POST /api/v1/cypher}: the query, its parameters ({@code $name} in the query), and limits. */
public record CypherRequest(String query, Map<String, Object> parameters, Integer maxRows, Long timeoutMs) {
}
