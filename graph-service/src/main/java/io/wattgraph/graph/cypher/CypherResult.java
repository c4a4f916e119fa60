package io.wattgraph.graph.cypher;

import java.util.List;

/** Result of a read-only query: column names, rows (values as JSON), and whether rows were cut at maxRows. */
public record CypherResult(List<String> columns, List<List<Object>> rows, int rowCount, boolean truncated,
                           String queryType) {
}
