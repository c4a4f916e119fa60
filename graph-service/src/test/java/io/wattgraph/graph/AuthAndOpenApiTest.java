package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

/** Bearer tokens with read and admin roles, the OpenAPI document, and the analysis timer. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.auth.enabled=true", "wattgraph.auth.read-tokens=reader-1,reader-2",
        "wattgraph.auth.admin-tokens=admin-1"})
@AutoConfigureObservability
class AuthAndOpenApiTest extends HarnessApiTest {

    private ResponseEntity<String> call(HttpMethod method, String path, String token, Object body) {
        HttpHeaders headers = new HttpHeaders();
        if (token != null) {
            headers.setBearerAuth(token);
        }
        return rest.exchange(path, method, new HttpEntity<>(body, headers), String.class);
    }

    @Test
    void readTokensReadAdminTokensWrite() throws Exception {
        ResponseEntity<String> none = call(HttpMethod.GET, "/api/v1/hosts", null, null);
        assertThat(none.getStatusCode()).isEqualTo(HttpStatus.UNAUTHORIZED);
        assertThat(none.getHeaders().getFirst("WWW-Authenticate")).startsWith("Bearer");
        assertThat(json.readTree(none.getBody()).get("error").asText()).isEqualTo("missing bearer token");
        assertThat(call(HttpMethod.GET, "/api/v1/hosts", "wrong", null).getStatusCode())
                .isEqualTo(HttpStatus.UNAUTHORIZED);
        assertThat(call(HttpMethod.GET, "/api/v1/hosts", "reader-2", null).getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(call(HttpMethod.GET, "/api/v1/hosts", "admin-1", null).getStatusCode()).isEqualTo(HttpStatus.OK);

        Map<String, Object> query = Map.of("query", "RETURN 1 AS one");
        ResponseEntity<String> readerPost = call(HttpMethod.POST, "/api/v1/cypher", "reader-1", query);
        assertThat(readerPost.getStatusCode()).isEqualTo(HttpStatus.FORBIDDEN);
        assertThat(json.readTree(readerPost.getBody()).get("status").asInt()).isEqualTo(403);
        assertThat(call(HttpMethod.POST, "/api/v1/cypher", "admin-1", query).getStatusCode()).isEqualTo(HttpStatus.OK);
    }

    @Test
    void withTheBudgetLoopOffTheViewIsEmptyAndManualBudgetsAreRefused() throws Exception {
        ResponseEntity<String> current = call(HttpMethod.GET, "/api/v1/power/budgets/current", "reader-1", null);
        assertThat(current.getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(json.readTree(current.getBody()).get("enabled").asBoolean()).isFalse();
        assertThat(json.readTree(current.getBody()).get("budgets")).isEmpty();
        ResponseEntity<String> manual = call(HttpMethod.POST, "/api/v1/power/budgets/manual", "admin-1",
                Map.of("host", "host-a", "watts", 50));
        assertThat(manual.getStatusCode()).isEqualTo(HttpStatus.CONFLICT);
        assertThat(json.readTree(manual.getBody()).get("error").asText()).contains("disabled");
    }

    @Test
    void healthAndOpenApiStayOpenPrometheusTakesAReadToken() throws Exception {
        assertThat(rest.getForEntity("/actuator/health/liveness", String.class).getStatusCode())
                .isEqualTo(HttpStatus.OK);
        // Components for everyone, details (disk path, Neo4j's answer or error) only with a token.
        JsonNode open = json.readTree(rest.getForEntity("/actuator/health", String.class).getBody());
        assertThat(open.at("/components/neo4j/status").asText()).isEqualTo("UP");
        assertThat(open.at("/components/diskSpace/details").isMissingNode()).isTrue();
        JsonNode withToken = json.readTree(call(HttpMethod.GET, "/actuator/health", "reader-1", null).getBody());
        assertThat(withToken.at("/components/diskSpace/details/path").asText()).isNotBlank();
        ResponseEntity<String> docs = rest.getForEntity("/v3/api-docs", String.class);
        assertThat(docs.getStatusCode()).isEqualTo(HttpStatus.OK);
        JsonNode api = json.readTree(docs.getBody());
        assertThat(api.get("openapi").asText()).startsWith("3.");
        for (String path : new String[] {"/api/v1/graph", "/api/v1/hosts", "/api/v1/service-graph",
                "/api/v1/projections/host", "/api/v1/projections/process-type", "/api/v1/analysis/operational",
                "/api/v1/analysis/critical-path", "/api/v1/cypher", "/api/v1/placement", "/api/v1/power/budgets",
                "/api/v1/power/budgets/current", "/api/v1/power/budgets/manual", "/api/v1/history"}) {
            assertThat(api.get("paths").has(path)).as(path).isTrue();
        }
        assertThat(api.at("/components/securitySchemes/bearer/scheme").asText()).isEqualTo("bearer");

        call(HttpMethod.GET, "/api/v1/analysis/operational", "reader-1", null);
        // Prometheus scrapes with a read token: the metrics export names workloads and their traffic.
        assertThat(call(HttpMethod.GET, "/actuator/prometheus", null, null).getStatusCode())
                .isEqualTo(HttpStatus.UNAUTHORIZED);
        String prometheus = call(HttpMethod.GET, "/actuator/prometheus", "reader-1", null).getBody();
        assertThat(prometheus).contains("wattgraph_analysis_seconds_count{")
                .containsPattern("wattgraph_analysis_seconds_count\\{[^}]*analysis=\"operational\"");
    }

    @Test
    void servicePageAndAssetsStayOpenDataDoesNot() {
        for (String path : new String[] {"/", "/index.html", "/app.js", "/app.css", "/js/map.js",
                "/vendor/cytoscape.min.js"}) {
            assertThat(call(HttpMethod.GET, path, null, null).getStatusCode()).as(path).isEqualTo(HttpStatus.OK);
        }
        assertThat(call(HttpMethod.GET, "/api/v1/service-graph", null, null).getStatusCode())
                .isEqualTo(HttpStatus.UNAUTHORIZED);
        assertThat(call(HttpMethod.GET, "/api/v1/service-graph", "reader-1", null).getStatusCode())
                .isEqualTo(HttpStatus.OK);
    }

    @Test
    void prestoSimulationEndpoint() throws Exception {
        ResponseEntity<String> r = call(HttpMethod.GET, "/api/v1/power/simulation?seed=42", "reader-1", null);
        assertThat(r.getStatusCode()).isEqualTo(HttpStatus.OK);
        JsonNode body = json.readTree(r.getBody());
        assertThat(body.get("rows")).hasSize(3);
        assertThat(body.get("table").asText()).contains("thesis Table 5.2");
        assertThat(call(HttpMethod.GET, "/api/v1/power/simulation?seed=x", "reader-1", null).getStatusCode())
                .isEqualTo(HttpStatus.BAD_REQUEST);
    }
}
