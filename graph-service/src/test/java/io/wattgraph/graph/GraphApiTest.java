package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.skyscreamer.jsonassert.JSONAssert;
import org.skyscreamer.jsonassert.JSONCompareMode;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;

/** The REST API, health and metrics against a real (harness) Neo4j seeded with {@link GraphFixture}. */
@AutoConfigureObservability // otherwise tests get no Prometheus registry
class GraphApiTest extends HarnessApiTest {

    private static final String NGINX = """
            {"id":"host-a/100/1000","kind":"process","hostId":"host-a","pid":100,"startTimeNs":1000,
             "comm":"nginx","cmdline":"nginx -g daemon off;","cgroupId":4242,"containerId":"ctr-1"}""";
    private static final String CURL = """
            {"id":"host-a/200/2000","kind":"process","hostId":"host-a","pid":200,"startTimeNs":2000,
             "comm":"curl","cmdline":"curl http://localhost/","cgroupId":7,"containerId":null}""";
    private static final String POSTGRES = """
            {"id":"host-b/300/3000","kind":"process","hostId":"host-b","pid":300,"startTimeNs":3000,
             "comm":"postgres","cmdline":"postgres -D /data","cgroupId":9,"containerId":null}""";
    private static final String WEB = """
            {"id":"203.0.113.7:443","kind":"external","address":"203.0.113.7","port":443}""";
    private static final String VISITOR = """
            {"id":"198.51.100.9","kind":"external","address":"198.51.100.9","port":null}""";

    // Raw properties: null where the stream job wrote no estimate (edges before sampled connections).
    private static final String VISITOR_TO_NGINX =
            edge("198.51.100.9", "host-a/100/1000", 40, 4000, 1, null, null, 70, 80);
    private static final String NGINX_TO_POSTGRES =
            edge("host-a/100/1000", "host-b/300/3000", 500, 7000, 1, null, null, 30, 40);
    private static final String CURL_TO_NGINX =
            edge("host-a/200/2000", "host-a/100/1000", 100, 2000, 2, 5.0, 1L, 10, 20);
    private static final String POSTGRES_TO_WEB =
            edge("host-b/300/3000", "203.0.113.7:443", 10, 20, 3, null, null, 50, 60);

    @Test
    void wholeGraphHasEveryTalksToEdgeWithItsEndpoints() throws Exception {
        ResponseEntity<String> response = rest.getForEntity("/api/v1/graph", String.class);

        assertThat(response.getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(response.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_JSON);
        // STRICT: exact fields, exact values, deterministic order (nodes by id, edges by source/target).
        JSONAssert.assertEquals(
                graph(nodes(VISITOR, WEB, NGINX, CURL, POSTGRES),
                        nodes(VISITOR_TO_NGINX, NGINX_TO_POSTGRES, CURL_TO_NGINX, POSTGRES_TO_WEB)),
                response.getBody(), JSONCompareMode.STRICT);
    }

    @Test
    void hostFilterKeepsEdgesWithAnEndpointProcessOnThatHost() throws Exception {
        ResponseEntity<String> hostB = rest.getForEntity("/api/v1/graph?host={h}", String.class, "host-b");
        assertThat(hostB.getStatusCode()).isEqualTo(HttpStatus.OK);
        JSONAssert.assertEquals(
                graph(nodes(WEB, NGINX, POSTGRES), nodes(NGINX_TO_POSTGRES, POSTGRES_TO_WEB)),
                hostB.getBody(), JSONCompareMode.STRICT);

        // host-a's local edge (both ends on host-a) appears once.
        ResponseEntity<String> hostA = rest.getForEntity("/api/v1/graph?host={h}", String.class, "host-a");
        JSONAssert.assertEquals(
                graph(nodes(VISITOR, NGINX, CURL, POSTGRES),
                        nodes(VISITOR_TO_NGINX, NGINX_TO_POSTGRES, CURL_TO_NGINX)),
                hostA.getBody(), JSONCompareMode.STRICT);
    }

    @Test
    void unknownHostGivesAnEmptyGraph() throws Exception {
        for (String host : new String[] {"host-z", "host-a' OR 1=1 //", "203.0.113.7:443"}) {
            ResponseEntity<String> response = rest.getForEntity("/api/v1/graph?host={h}", String.class, host);
            assertThat(response.getStatusCode()).as(host).isEqualTo(HttpStatus.OK);
            JSONAssert.assertEquals(graph("[]", "[]"), response.getBody(), JSONCompareMode.STRICT);
        }
    }

    @Test
    void invalidHostIsA400NamingTheParameter() throws Exception {
        for (String host : new String[] {"", "   ", "a".repeat(254), "host\u0001a", "host\na"}) {
            ResponseEntity<String> response = rest.getForEntity("/api/v1/graph?host={h}", String.class, host);
            assertThat(response.getStatusCode()).as(host).isEqualTo(HttpStatus.BAD_REQUEST);
            JsonNode body = json.readTree(response.getBody());
            assertThat(body.get("status").asInt()).isEqualTo(400);
            assertThat(body.get("error").asText()).contains("'host'");
            assertThat(body.get("parameter").asText()).isEqualTo("host");
        }
        // The longest allowed id is still accepted.
        assertThat(rest.getForEntity("/api/v1/graph?host={h}", String.class, "a".repeat(253)).getStatusCode())
                .isEqualTo(HttpStatus.OK);
    }

    @Test
    void hostsHaveProcessAndContainerCounts() throws Exception {
        ResponseEntity<String> response = rest.getForEntity("/api/v1/hosts", String.class);

        assertThat(response.getStatusCode()).isEqualTo(HttpStatus.OK);
        JSONAssert.assertEquals("""
                {"hosts":[{"id":"host-a","processCount":2,"containerCount":1,"metricsWindowEndNs":null,"idlePowerW":null},
                          {"id":"host-b","processCount":2,"containerCount":0,"metricsWindowEndNs":null,"idlePowerW":null}]}""",
                response.getBody(), JSONCompareMode.STRICT);
    }

    @Test
    void unknownPathIsAJsonError() throws Exception {
        ResponseEntity<String> response = rest.getForEntity("/api/v1/nothing-here", String.class);

        assertThat(response.getStatusCode()).isEqualTo(HttpStatus.NOT_FOUND);
        JsonNode body = json.readTree(response.getBody());
        assertThat(body.get("status").asInt()).isEqualTo(404);
        assertThat(body.get("error").asText()).isNotBlank();
    }

    @Test
    void aMultipartContentTypeIsRefusedNotAServerError() throws Exception {
        // Found by SchemathesisFuzzTest: 'multipart/form-data' without a boundary was a 500 on every route.
        org.springframework.http.HttpHeaders headers = new org.springframework.http.HttpHeaders();
        headers.set("Content-Type", "multipart/form-data");
        ResponseEntity<String> get = rest.exchange("/api/v1/hosts", org.springframework.http.HttpMethod.GET,
                new org.springframework.http.HttpEntity<>(null, headers), String.class);
        assertThat(get.getStatusCode()).isEqualTo(HttpStatus.OK);
        ResponseEntity<String> post = rest.exchange("/api/v1/cypher", org.springframework.http.HttpMethod.POST,
                new org.springframework.http.HttpEntity<>("{\"query\": \"RETURN 1\"}", headers), String.class);
        assertThat(post.getStatusCode()).isEqualTo(HttpStatus.UNSUPPORTED_MEDIA_TYPE);
    }

    @Test
    void healthAndReadinessAreUpWithNeo4j() throws Exception {
        ResponseEntity<String> health = rest.getForEntity("/actuator/health", String.class);
        assertThat(health.getStatusCode()).isEqualTo(HttpStatus.OK);
        JsonNode body = json.readTree(health.getBody());
        assertThat(body.at("/status").asText()).isEqualTo("UP");
        assertThat(body.at("/components/neo4j/status").asText()).isEqualTo("UP");

        ResponseEntity<String> readiness = rest.getForEntity("/actuator/health/readiness", String.class);
        assertThat(readiness.getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(json.readTree(readiness.getBody()).at("/components/neo4j/status").asText()).isEqualTo("UP");
    }

    @Test
    void prometheusHasTheNeo4jQueryTimerAndHttpMetrics() {
        rest.getForEntity("/api/v1/graph", String.class);
        rest.getForEntity("/api/v1/hosts", String.class);

        ResponseEntity<String> response = rest.getForEntity("/actuator/prometheus", String.class);

        assertThat(response.getStatusCode()).isEqualTo(HttpStatus.OK);
        String[] lines = response.getBody().split("\n");
        assertThat(Arrays.stream(lines).filter(l -> l.startsWith("wattgraph_neo4j_query_seconds_count{")))
                .anyMatch(l -> l.contains("query=\"graph\"") && l.contains("outcome=\"success\""))
                .anyMatch(l -> l.contains("query=\"hosts\"") && l.contains("outcome=\"success\""));
        assertThat(Arrays.stream(lines).filter(l -> l.startsWith("http_server_requests_seconds_count{")))
                .anyMatch(l -> l.contains("uri=\"/api/v1/graph\""));
    }

    private static String edge(String source, String target, long c2s, long s2c, long connections,
                               Double estimated, Long sampled, long first, long last) {
        return String.format("""
                {"source":"%s","target":"%s","type":"TALKS_TO","bytesClientToServer":%d,
                 "bytesServerToClient":%d,"connections":%d,"connectionsEstimated":%s,"connectionsSampled":%s,
                 "firstSeenNs":%d,"lastSeenNs":%d}""",
                source, target, c2s, s2c, connections, estimated, sampled, first, last);
    }

    private static String nodes(String... items) {
        return "[" + String.join(",", items) + "]";
    }

    private static String graph(String nodes, String edges) {
        return "{\"nodes\":" + nodes + ",\"edges\":" + edges + "}";
    }
}
