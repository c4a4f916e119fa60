package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

/** {@code /api/v1/http-routes} over the shared harness Neo4j ({@link GraphFixture}: routes on nginx and postgres). */
class HttpRoutesApiTest extends HarnessApiTest {

    private JsonNode get(String query) throws Exception {
        return getOk("/api/v1/http-routes" + query);
    }

    private static List<String> routes(JsonNode rows) {
        List<String> out = new ArrayList<>();
        rows.forEach(r -> out.add(r.get("entityId").asText() + " " + r.get("method").asText() + " " + r.get("path").asText()));
        return out;
    }

    @Test
    void servedRoutesSlowestFirstAcrossProcesses() throws Exception {
        JsonNode rows = get("");
        // SERVER routes (the default role) by p99: 30, 20, 7, 0.9 ms.
        assertThat(routes(rows)).containsExactly(
                "host-a/100/1000 POST /orders",
                "host-b/300/3000 GET /stats",
                "host-a/100/1000 GET /users/{id}",
                "host-a/100/1000 GET /static/aaaaaaaa");
    }

    @Test
    void figuresOfOneRouteInMilliseconds() throws Exception {
        JsonNode r = get("?sort=rate&limit=1").get(0);
        assertThat(r.get("entityId").asText()).isEqualTo("host-a/100/1000");
        assertThat(r.get("hostId").asText()).isEqualTo("host-a");
        assertThat(r.get("level").asText()).isEqualTo("process");
        assertThat(r.get("role").asText()).isEqualTo("SERVER");
        assertThat(r.get("path").asText()).isEqualTo("/users/{id}");
        assertThat(r.get("pathTruncated").asBoolean()).isFalse();
        assertThat(r.get("transactions").asLong()).isEqualTo(300);
        assertThat(r.get("requestRate").asDouble()).isEqualTo(30.0);
        assertThat(r.get("meanMs").asDouble()).isEqualTo(2.5);
        assertThat(r.get("p50Ms").asDouble()).isEqualTo(2.0);
        assertThat(r.get("p90Ms").asDouble()).isEqualTo(4.0);
        assertThat(r.get("p99Ms").asDouble()).isEqualTo(7.0);
        assertThat(r.get("windowEndNs").asLong()).isEqualTo(90);
    }

    @Test
    void filtersByRoleHostAndTruncation() throws Exception {
        assertThat(routes(get("?role=client"))).containsExactly("host-a/100/1000 GET /health");
        assertThat(routes(get("?role=any&sort=transactions"))).containsExactly(
                "host-a/100/1000 GET /users/{id}", "host-a/100/1000 POST /orders", "host-a/100/1000 GET /health",
                "host-a/100/1000 GET /static/aaaaaaaa", "host-b/300/3000 GET /stats");
        assertThat(routes(get("?host=host-b"))).containsExactly("host-b/300/3000 GET /stats");
        JsonNode truncated = get("?sort=transactions&host=host-a").get(2);
        assertThat(truncated.get("path").asText()).isEqualTo("/static/aaaaaaaa");
        assertThat(truncated.get("pathTruncated").asBoolean()).isTrue();
        assertThat(get("?level=container")).isEmpty();
    }

    @Test
    void badParametersAreNamed() {
        for (String[] c : new String[][] {{"?role=peer", "role"}, {"?sort=name", "sort"}, {"?limit=0", "limit"},
                {"?limit=x", "limit"}, {"?level=pod", "level"}, {"?host=", "host"}}) {
            ResponseEntity<String> r = rest.getForEntity("/api/v1/http-routes" + c[0], String.class);
            assertThat(r.getStatusCode()).as(c[0]).isEqualTo(HttpStatus.BAD_REQUEST);
            assertThat(r.getBody()).as(c[0]).contains(c[1]);
        }
    }
}
