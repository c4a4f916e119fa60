package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.wattgraph.graph.power.BudgetPublisher;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A MANUAL budget survives a restart of the service: set through the API of one instance, it is stored in the
 * shared harness Neo4j ({@code :PowerBudgetOverride}), read back by a second instance, which publishes it to Kafka
 * (the local-stack broker) at its first cycle; cleared there, a third instance starts without it. Admin-only
 * writes are covered by {@link BudgetPublisherTest}.
 */
class ManualBudgetRestartTest {

    static final String TOPIC = "budgets-restart-" + UUID.randomUUID();

    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();

    private static ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(GraphServiceApplication.class).properties("spring.main.banner-mode=off")
                .run("--server.port=0", "--wattgraph.neo4j.uri=" + TestNeo4j.boltUri(),
                        "--wattgraph.power.budgets.enabled=true", "--wattgraph.power.budgets.period=1h",
                        "--wattgraph.power.budgets.bootstrap-servers=" + TestKafka.bootstrap(),
                        "--wattgraph.power.budgets.topic=" + TOPIC,
                        "--wattgraph.power.budgets.default-min-watts=10", "--wattgraph.power.budgets.default-max-watts=100",
                        "--logging.level.org.apache.kafka=WARN", "--logging.level.kafka=WARN");
    }

    private HttpResponse<String> call(ConfigurableApplicationContext ctx, String method, String path, String body)
            throws Exception {
        String base = "http://127.0.0.1:" + ctx.getEnvironment().getProperty("local.server.port");
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void manualBudgetIsReadBackAfterARestartUntilCleared() throws Exception {
        try (ConfigurableApplicationContext first = start()) {
            HttpResponse<String> set = call(first, "POST", "/api/v1/power/budgets/manual",
                    "{\"host\": \"host-b\", \"watts\": 42.5, \"reason\": \"maintenance\"}");
            assertThat(set.statusCode()).as(set.body()).isEqualTo(200);
        }
        try (ConfigurableApplicationContext second = start()) {
            // The first cycle (run by the loop at start, or this one) publishes the restored budget.
            List<BudgetPublisher.Outcome> cycle = second.getBean(BudgetPublisher.class).runCycle();
            BudgetPublisher.Outcome hostB = cycle.stream().filter(o -> o.budget().hostId().equals("host-b"))
                    .findFirst().orElseThrow();
            assertThat(hostB.published()).isTrue();
            assertThat(hostB.budget().policy()).isEqualTo("MANUAL");
            assertThat(hostB.budget().budgetWatts()).isEqualTo(42.5);
            assertThat(hostB.budget().reason()).startsWith("set by an administrator: maintenance");
            JsonNode current = json.readTree(call(second, "GET", "/api/v1/power/budgets/current", null).body());
            assertThat(current.at("/manual/host-b/watts").asDouble()).isEqualTo(42.5);
            assertThat(current.at("/manual/host-b/reason").asText()).isEqualTo("maintenance");
            assertThat(call(second, "DELETE", "/api/v1/power/budgets/manual/host-b", null).statusCode()).isEqualTo(204);
        }
        try (ConfigurableApplicationContext third = start()) {
            List<BudgetPublisher.Outcome> cycle = third.getBean(BudgetPublisher.class).runCycle();
            assertThat(cycle).extracting(o -> o.budget().policy()).doesNotContain("MANUAL");
            JsonNode current = json.readTree(call(third, "GET", "/api/v1/power/budgets/current", null).body());
            assertThat(current.get("manual").size()).isZero();
            assertThat(call(third, "DELETE", "/api/v1/power/budgets/manual/host-b", null).statusCode()).isEqualTo(404);
        }
    }
}
