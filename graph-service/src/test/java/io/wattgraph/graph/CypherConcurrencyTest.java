package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.graph.cypher.ReadOnlyCypher;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.http.ResponseEntity;

/** With one Cypher query allowed at a time, a second one is answered 429 (Retry-After) while the first runs. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "wattgraph.cypher.max-concurrent=1")
class CypherConcurrencyTest extends HarnessApiTest {

    @Autowired
    private ReadOnlyCypher cypher;

    @Test
    void aQueryBeyondTheLimitIsAnswered429AndTheServiceRecovers() throws Exception {
        CompletableFuture<ResponseEntity<String>> slow = CompletableFuture.supplyAsync(() -> rest.postForEntity(
                "/api/v1/cypher", Map.of("query", "UNWIND range(1, 1000000000000) AS x WITH x WHERE x < 0 RETURN count(x)",
                        "timeoutMs", 5_000), String.class));
        for (int i = 0; i < 3_000 && cypher.running() == 0 && !slow.isDone(); i++) {
            Thread.sleep(10); // bounded wait until the slow query holds the only permit
        }
        assertThat(cypher.running()).isEqualTo(1);
        ResponseEntity<String> busy = rest.postForEntity("/api/v1/cypher", Map.of("query", "RETURN 1"), String.class);
        assertThat(busy.getStatusCode().value()).as(busy.getBody()).isEqualTo(429);
        assertThat(busy.getHeaders().getFirst("Retry-After")).isEqualTo("1");
        assertThat(busy.getBody()).contains("wattgraph.cypher.max-concurrent=1");

        assertThat(slow.get().getStatusCode().value()).as(slow.get().getBody()).isEqualTo(408);
        assertThat(cypher.running()).isZero();
        assertThat(rest.postForEntity("/api/v1/cypher", Map.of("query", "RETURN 1"), String.class).getStatusCode().value())
                .isEqualTo(200);
    }
}
