package io.wattgraph.graph.routes;

import io.wattgraph.graph.neo4j.Neo4jReader;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.springframework.stereotype.Repository;

/** The Cypher of {@link HttpRoutesController}: a constant query, request values as parameters only. */
@Repository
public class HttpRouteRepository {

    // One row per route of every node of the level with routes; the key is `ROLE METHOD path`.
    private static final String HTTP_ROUTES = """
            MATCH (n)
            WHERE n.httpRouteKeys IS NOT NULL
              AND CASE $level WHEN 'process' THEN n:Process WHEN 'container' THEN n:Container ELSE n:Host END
              AND ($host IS NULL OR coalesce(n.hostId, n.id) = $host)
            UNWIND range(0, size(n.httpRouteKeys) - 1) AS i
            WITH n, i, n.httpRouteKeys[i] AS key
            WHERE $role IS NULL OR key STARTS WITH $role + ' '
            WITH n, key, n.httpRouteTransactions[i] AS transactions, n.httpRouteRates[i] AS rate,
                 n.httpRouteMeanNs[i] AS mean, n.httpRouteP50Ns[i] AS p50, n.httpRouteP90Ns[i] AS p90,
                 n.httpRouteP99Ns[i] AS p99
            RETURN n.id AS id, coalesce(n.hostId, n.id) AS hostId, key, transactions, rate, mean, p50, p90, p99,
                   n.metricsWindowEndNs AS windowEndNs
            ORDER BY CASE $sort WHEN 'rate' THEN rate WHEN 'transactions' THEN transactions ELSE p99 END DESC, id, key
            LIMIT $limit
            """;

    private final Neo4jReader reader;

    public HttpRouteRepository(Neo4jReader reader) {
        this.reader = reader;
    }

    /** Routes of the latest windows, see {@link HttpRoutesController}; role null = both. */
    public List<HttpRouteStat> httpRoutes(String level, String host, String role, String sort, int limit) {
        Map<String, Object> p = new HashMap<>();
        p.put("level", level);
        p.put("host", host);
        p.put("role", role);
        p.put("sort", sort);
        p.put("limit", limit);
        return reader.read("http_routes", HTTP_ROUTES, p, r -> {
            String[] k = HttpRouteStat.parseKey(r.get("key").asString(""));
            if (k == null) {
                return null;
            }
            boolean truncated = k[2].endsWith("…");
            String path = truncated ? k[2].substring(0, k[2].length() - 1) : k[2];
            return new HttpRouteStat(level, r.get("id").asString(null), r.get("hostId").asString(null), k[0], k[1],
                    path, truncated, r.get("transactions").asLong(0), r.get("rate").asDouble(0),
                    r.get("mean").asDouble(0) / 1e6, r.get("p50").asLong(0) / 1e6, r.get("p90").asLong(0) / 1e6,
                    r.get("p99").asLong(0) / 1e6, r.get("windowEndNs").isNull() ? null : r.get("windowEndNs").asLong());
        }).stream().filter(Objects::nonNull).toList();
    }
}
