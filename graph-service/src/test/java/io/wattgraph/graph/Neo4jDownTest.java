package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** A context pointed at a port where nothing listens: requests are 503s and readiness is down. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "wattgraph.neo4j.max-retry-time=0s") // fail at once instead of retrying
class Neo4jDownTest {

    @DynamicPropertySource
    static void unreachableNeo4j(DynamicPropertyRegistry registry) throws Exception {
        int port = TestNeo4j.closedPort();
        registry.add("wattgraph.neo4j.uri", () -> "bolt://127.0.0.1:" + port);
    }

    @Autowired
    private TestRestTemplate rest;

    private final ObjectMapper json = new ObjectMapper();

    @Test
    void apiAnswers503WithAJsonError() throws Exception {
        for (String path : new String[] {"/api/v1/graph", "/api/v1/graph?host=host-a", "/api/v1/hosts",
                "/api/v1/service-graph?level=pod", "/api/v1/projections/host", "/api/v1/analysis/operational"}) {
            ResponseEntity<String> response = rest.getForEntity(path, String.class);
            assertThat(response.getStatusCode()).as(path).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
            JsonNode body = json.readTree(response.getBody());
            assertThat(body.get("status").asInt()).isEqualTo(503);
            assertThat(body.get("error").asText()).startsWith("Neo4j is unavailable");
        }
    }

    @Test
    void healthAndReadinessAreDownButLivenessIsUp() throws Exception {
        ResponseEntity<String> health = rest.getForEntity("/actuator/health", String.class);
        assertThat(health.getStatusCode()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
        assertThat(json.readTree(health.getBody()).at("/components/neo4j/status").asText()).isEqualTo("DOWN");

        assertThat(rest.getForEntity("/actuator/health/readiness", String.class).getStatusCode())
                .isEqualTo(HttpStatus.SERVICE_UNAVAILABLE);
        assertThat(rest.getForEntity("/actuator/health/liveness", String.class).getStatusCode())
                .isEqualTo(HttpStatus.OK);
    }
}
