package io.wattgraph.graph;

import io.wattgraph.graph.neo4j.Neo4jReader;
import java.util.List;
import java.util.Map;
import org.neo4j.driver.Record;
import org.springframework.stereotype.Repository;

/**
 * The Cypher of the service. Every query is a constant; request values go in as parameters only.
 * Endpoints are restricted to Process and External, the only node kinds TALKS_TO joins in the contract.
 */
@Repository
public class GraphRepository {

    private static final String ALL_TALKS_TO = """
            MATCH (client:Process|External)-[talk:TALKS_TO]->(server:Process|External)
            RETURN client, talk, server
            """;

    // Edges with at least one endpoint process RUNS_ON the host; DISTINCT because a local connection
    // has both endpoints on the host and would otherwise come back twice.
    private static final String HOST_TALKS_TO = """
            MATCH (:Host {id: $host})<-[:RUNS_ON]-(p:Process)-[talk:TALKS_TO]-()
            WITH DISTINCT talk
            WITH talk, startNode(talk) AS client, endNode(talk) AS server
            WHERE (client:Process OR client:External) AND (server:Process OR server:External)
            RETURN client, talk, server
            """;

    private static final String HOSTS = """
            MATCH (h:Host)
            RETURN h.id AS id,
                   COUNT { (:Process)-[:RUNS_ON]->(h) } AS processCount,
                   COUNT { (:Container)-[:RUNS_ON]->(h) } AS containerCount
            ORDER BY id
            """;

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

    public GraphRepository(Neo4jReader reader) {
        this.reader = reader;
    }

    public List<TalksToRow> allTalksTo() {
        return reader.read("graph", ALL_TALKS_TO, Map.of(), GraphRepository::toRow);
    }

    public List<TalksToRow> talksToOnHost(String hostId) {
        return reader.read("graph_by_host", HOST_TALKS_TO, Map.of("host", hostId), GraphRepository::toRow);
    }

    /** Routes of the latest windows, see {@link HttpRoutesController}; role null = both. */
    public List<HttpRouteStat> httpRoutes(String level, String host, String role, String sort, int limit) {
        Map<String, Object> p = new java.util.HashMap<>();
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
        }).stream().filter(java.util.Objects::nonNull).toList();
    }

    public List<HostSummary> hosts() {
        return reader.read("hosts", HOSTS, Map.of(), r -> new HostSummary(
                r.get("id").asString(null), r.get("processCount").asLong(), r.get("containerCount").asLong()));
    }

    private static TalksToRow toRow(Record r) {
        return new TalksToRow(r.get("client").asNode(), r.get("talk").asRelationship(), r.get("server").asNode());
    }
}
