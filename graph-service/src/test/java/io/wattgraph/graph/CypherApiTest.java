package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

/** The read-only Cypher endpoint against the shared harness Neo4j. */
@AutoConfigureObservability
class CypherApiTest extends HarnessApiTest {

    private ResponseEntity<String> post(String query, Map<String, Object> parameters, Integer maxRows, Long timeoutMs) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("query", query);
        body.put("parameters", parameters);
        body.put("maxRows", maxRows);
        body.put("timeoutMs", timeoutMs);
        return rest.postForEntity("/api/v1/cypher", body, String.class);
    }

    private JsonNode ok(ResponseEntity<String> r) throws Exception {
        assertThat(r.getStatusCode()).as(r.getBody()).isEqualTo(HttpStatus.OK);
        return json.readTree(r.getBody());
    }

    private JsonNode error(ResponseEntity<String> r, HttpStatus status) throws Exception {
        assertThat(r.getStatusCode()).as(r.getBody()).isEqualTo(status);
        JsonNode body = json.readTree(r.getBody());
        assertThat(body.get("status").asInt()).isEqualTo(status.value());
        assertThat(body.get("error").asText()).isNotBlank();
        return body;
    }

    @Test
    void parameterisedReadWithNodesAndRelationships() throws Exception {
        JsonNode r = ok(post("MATCH (p:Process {hostId: $host})-[t:TALKS_TO]->(s) RETURN p.comm AS comm, t, s "
                + "ORDER BY comm", Map.of("host", "host-a"), null, null));
        assertThat(r.get("columns").toString()).isEqualTo("[\"comm\",\"t\",\"s\"]");
        assertThat(r.get("rowCount").asInt()).isEqualTo(2);
        assertThat(r.get("truncated").asBoolean()).isFalse();
        assertThat(r.at("/rows/0/0").asText()).isEqualTo("curl");
        assertThat(r.at("/rows/0/1/type").asText()).isEqualTo("TALKS_TO");
        assertThat(r.at("/rows/0/1/properties/bytesClientToServer").asLong()).isEqualTo(100);
        assertThat(r.at("/rows/0/2/labels/0").asText()).isEqualTo("Process");
        assertThat(r.at("/rows/0/2/properties/comm").asText()).isEqualTo("nginx");
        // A value that looks like injection is just a string parameter.
        assertThat(ok(post("MATCH (h:Host {id: $id}) RETURN h", Map.of("id", "x' OR 1=1 //"), null, null))
                .get("rowCount").asInt()).isZero();
    }

    @Test
    void rowLimitTruncates() throws Exception {
        JsonNode r = ok(post("UNWIND range(1, 50) AS x RETURN x, [x, 'a'] AS l, {k: x} AS m", null, 10, null));
        assertThat(r.get("rowCount").asInt()).isEqualTo(10);
        assertThat(r.get("truncated").asBoolean()).isTrue();
        assertThat(r.at("/rows/9/1/1").asText()).isEqualTo("a");
        assertThat(r.at("/rows/9/2/k").asInt()).isEqualTo(10);
    }

    @Test
    void writesAreRefusedAndChangeNothing() throws Exception {
        for (String write : new String[] {
                "CREATE (:Host {id: 'evil'})",
                "MATCH (n) DETACH DELETE n",
                "MATCH (h:Host) SET h.id = 'x' RETURN h",
                "MERGE (h:Host {id: 'evil'}) RETURN h",
                "CREATE INDEX evil FOR (n:Host) ON (n.evil)",
                "MATCH (h:Host) CALL { WITH h CREATE (:Host {id: 'evil2'}) } RETURN count(*)"}) {
            JsonNode body = error(post(write, null, null, null), HttpStatus.FORBIDDEN);
            assertThat(body.get("error").asText()).as(write).containsIgnoringCase("read-only");
        }
        for (String outside : new String[] {"LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l",
                "CALL dbms.listConfig()"}) {
            error(post(outside, null, null, null), HttpStatus.FORBIDDEN);
        }
        // Neo4j refuses this one itself (administration commands are routed, not USEd): still no rows.
        error(post("USE system SHOW USERS", null, null, null), HttpStatus.BAD_REQUEST);
        assertThat(ok(post("MATCH (h:Host) RETURN count(h) AS n", null, null, null)).at("/rows/0/0").asInt())
                .isEqualTo(2);
    }

    @Test
    void timeLimitStopsALongQuery() throws Exception {
        JsonNode body = error(post("UNWIND range(1, 1000000000000) AS x WITH x WHERE x < 0 RETURN count(x)",
                null, null, 300L), HttpStatus.REQUEST_TIMEOUT);
        assertThat(body.get("error").asText()).contains("time limit of 300 ms");
    }

    @Test
    void badRequestsAre400s() throws Exception {
        assertThat(error(post("MATCH (n RETURN n", null, null, null), HttpStatus.BAD_REQUEST).get("error").asText())
                .containsIgnoringCase("invalid input");
        assertThat(error(post("RETURN $missing", null, null, null), HttpStatus.BAD_REQUEST).get("error").asText())
                .contains("missing");
        assertThat(error(post(" ", null, null, null), HttpStatus.BAD_REQUEST).get("parameter").asText())
                .isEqualTo("query");
        assertThat(error(post("RETURN 1", null, 0, null), HttpStatus.BAD_REQUEST).get("parameter").asText())
                .isEqualTo("maxRows");
        assertThat(error(post("RETURN 1", null, null, 3_600_000L), HttpStatus.BAD_REQUEST).get("parameter").asText())
                .isEqualTo("timeoutMs");
        ResponseEntity<String> notJson = rest.postForEntity("/api/v1/cypher",
                new org.springframework.http.HttpEntity<>("{not json", jsonHeaders()), String.class);
        error(notJson, HttpStatus.BAD_REQUEST);
    }

    private static org.springframework.http.HttpHeaders jsonHeaders() {
        org.springframework.http.HttpHeaders h = new org.springframework.http.HttpHeaders();
        h.setContentType(org.springframework.http.MediaType.APPLICATION_JSON);
        return h;
    }
}
