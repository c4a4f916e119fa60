package io.wattgraph.graph.topology;

import io.wattgraph.graph.neo4j.Neo4jReader;
import java.util.List;
import java.util.Map;
import org.neo4j.driver.Record;
import org.springframework.stereotype.Repository;

/**
 * The Cypher of {@code /api/v1/graph} and {@code /api/v1/hosts}. Every query is a constant; request values go in
 * as parameters only.
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
                   COUNT { (:Container)-[:RUNS_ON]->(h) } AS containerCount,
                   h.metricsWindowEndNs AS windowEndNs,
                   h.idlePowerW AS idlePowerW
            ORDER BY id
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

    public List<HostSummary> hosts() {
        return reader.read("hosts", HOSTS, Map.of(), r -> new HostSummary(
                r.get("id").asString(null), r.get("processCount").asLong(), r.get("containerCount").asLong(),
                r.get("windowEndNs").isNull() ? null : r.get("windowEndNs").asLong(),
                r.get("idlePowerW").isNull() ? null : r.get("idlePowerW").asDouble()));
    }

    private static TalksToRow toRow(Record r) {
        return new TalksToRow(r.get("client").asNode(), r.get("talk").asRelationship(), r.get("server").asNode());
    }
}
