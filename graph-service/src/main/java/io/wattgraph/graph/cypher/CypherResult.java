package io.wattgraph.graph.cypher;

import java.util.List;

/**
 * Result of a read-only query: column names, rows (values as JSON), whether rows were cut and by which limit
 * ({@code maxRows} or {@code maxResultBytes}; null when not cut).
 */
public record CypherResult(List<String> columns, List<List<Object>> rows, int rowCount, boolean truncated,
                           String queryType, String limit) {
}
