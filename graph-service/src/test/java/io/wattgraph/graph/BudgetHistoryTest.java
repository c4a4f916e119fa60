package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code GET /api/v1/power/budgets/history} and the power chart's budget steps, with the budget loop on against the
 * local-stack Kafka and a Neo4j of this class's own: two MANUAL budgets for host-h published two seconds apart, then
 * host-h's measured windows around them. The history is in Neo4j, so a restarted service (loop off) serves it too.
 * Browser part: {@code src/test/browser/budget-history.test.mjs}.
 */
@DirtiesContext
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.power.budgets.enabled=true", "wattgraph.power.budgets.period=1h",
        "wattgraph.power.budgets.default-min-watts=10", "wattgraph.power.budgets.default-max-watts=100",
        "wattgraph.power.budgets.history-entries=3", "wattgraph.power.budgets.kafka-timeout=5s",
        "logging.level.kafka=WARN", "logging.level.org.apache.kafka=WARN", "logging.level.state.change.logger=WARN"})
class BudgetHistoryTest {

    static final String TOPIC = "budget-history-" + UUID.randomUUID();
    @RegisterExtension
    static final ClassNeo4j NEO4J = new ClassNeo4j("budget-history");
    private static long t1;
    private static long t2;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", () -> NEO4J.boltUri().toString());
        registry.add("wattgraph.power.budgets.bootstrap-servers", TestKafka::bootstrap);
        registry.add("wattgraph.power.budgets.topic", () -> TOPIC);
    }

    @BeforeAll
    static void requireBrowser() {
        BrowserScenarios.requireBrowser();
    }

    @LocalServerPort
    private int port;

    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();

    private HttpResponse<String> call(int onPort, String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + onPort + path))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private long manual(String host, double watts) throws Exception {
        HttpResponse<String> r = call(port, "POST", "/api/v1/power/budgets/manual",
                "{\"host\": \"" + host + "\", \"watts\": " + watts + "}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return json.readTree(r.body()).at("/budget/computedAtNs").asLong();
    }

    private JsonNode history(int onPort, String query) throws Exception {
        HttpResponse<String> r = call(onPort, "GET", "/api/v1/power/budgets/history" + query, null);
        assertThat(r.statusCode()).as(query + ": " + r.body()).isEqualTo(200);
        return json.readTree(r.body());
    }

    private static List<Double> watts(JsonNode h) {
        List<Double> out = new ArrayList<>();
        h.get("budgets").forEach(b -> out.add(b.get("budgetWatts").asDouble()));
        return out;
    }

    @Test
    @Order(1)
    void everyPublishedBudgetIsKeptAndServedByHostAndTimeRange() throws Exception {
        t1 = manual("host-h", 40);
        Thread.sleep(2000); // two budgets at instants the chart draws apart, not a performance bound
        t2 = manual("host-h", 60);
        // host-h's measured windows 40 s and 20 s before the first budget and between the two.
        long s = TimeUnit.SECONDS.toNanos(1);
        try (Driver d = GraphDatabase.driver(NEO4J.boltUri(), AuthTokens.none()); Session session = d.session()) {
            session.run("CREATE (:Host {id: 'host-h', cores: 4, historyWindowEndNs: [$t1 - 40 * $s, $t1 - 20 * $s, "
                    + "($t1 + $t2) / 2], historyRevision: [0, 0, 0], historyCpuUsage: [1.0, 1.5, 2.0], "
                    + "historyPowerW: [30.0, 35.0, 45.0], historyRequestRate: [0.0, 0.0, 0.0]})",
                    Map.of("t1", t1, "t2", t2, "s", s)).consume();
        }

        JsonNode all = history(port, "?host=host-h");
        assertThat(all.get("host").asText()).isEqualTo("host-h");
        assertThat(all.get("truncated").asBoolean()).isFalse();
        assertThat(watts(all)).containsExactly(40.0, 60.0);
        JsonNode first = all.at("/budgets/0"), second = all.at("/budgets/1");
        assertThat(first.get("policy").asText()).isEqualTo("MANUAL");
        assertThat(first.get("computedAtNs").asLong()).isEqualTo(t1);
        assertThat(second.get("computedAtNs").asLong()).isEqualTo(t2);
        assertThat(second.get("sequence").asLong()).isGreaterThan(first.get("sequence").asLong());
        assertThat(first.get("validUntilNs").asLong()).isEqualTo(t1 + TimeUnit.HOURS.toNanos(3));

        // A range: the budget in force at fromNs leads; toNs ends it; nothing after.
        assertThat(watts(history(port, "?host=host-h&fromNs=" + (t1 + 1)))).containsExactly(40.0, 60.0);
        assertThat(watts(history(port, "?host=host-h&fromNs=" + (t2 + 1)))).containsExactly(60.0);
        assertThat(watts(history(port, "?host=host-h&toNs=" + t1))).containsExactly(40.0);
        assertThat(watts(history(port, "?host=host-h&fromNs=" + t1 + "&toNs=" + (t2 - 1)))).containsExactly(40.0);
        assertThat(watts(history(port, "?host=host-h&toNs=" + (t1 - 1)))).isEmpty();
        // limit keeps the newest and says so.
        JsonNode one = history(port, "?host=host-h&limit=1");
        assertThat(watts(one)).containsExactly(60.0);
        assertThat(one.get("truncated").asBoolean()).isTrue();
        // A host never budgeted: an empty list.
        assertThat(watts(history(port, "?host=nobody"))).isEmpty();
    }

    @Test
    @Order(2)
    void eachHostKeepsItsNewestEntries() throws Exception {
        for (double w : new double[] {11, 12, 13, 14}) {
            manual("host-k", w);
        }
        // history-entries=3: the oldest of four is gone, host-h's two are untouched.
        assertThat(watts(history(port, "?host=host-k"))).containsExactly(12.0, 13.0, 14.0);
        assertThat(watts(history(port, "?host=host-h"))).containsExactly(40.0, 60.0);
        assertThat(call(port, "DELETE", "/api/v1/power/budgets/manual/host-k", null).statusCode()).isEqualTo(204);
    }

    @Test
    @Order(3)
    void badInputIsA400NamingTheParameter() throws Exception {
        Map<String, String> bad = Map.of(
                "", "host",
                "?host=%20", "host",
                "?host=a%00b", "host",
                "?host=" + "h".repeat(254), "host",
                "?host=host-h&fromNs=-1", "fromNs",
                "?host=host-h&fromNs=1e9", "fromNs",
                "?host=host-h&toNs=99999999999999999999", "toNs",
                "?host=host-h&fromNs=10&toNs=9", "fromNs",
                "?host=host-h&limit=0", "limit",
                "?host=host-h&limit=8641", "limit");
        for (var e : bad.entrySet()) {
            HttpResponse<String> r = call(port, "GET", "/api/v1/power/budgets/history" + e.getKey(), null);
            assertThat(r.statusCode()).as(e.getKey() + ": " + r.body()).isEqualTo(400);
            JsonNode body = json.readTree(r.body());
            assertThat(body.get("parameter").asText()).as(e.getKey()).isEqualTo(e.getValue());
            assertThat(body.get("error").asText()).as(e.getKey()).contains(e.getValue());
        }
        HttpResponse<String> r = call(port, "GET", "/api/v1/power/budgets/history?host=host-h&limit=x"
                + URLEncoder.encode("' OR 1=1", StandardCharsets.UTF_8), null);
        assertThat(r.statusCode()).isEqualTo(400);
    }

    @Test
    @Order(4)
    void thePowerChartDrawsTwoPublishedBudgetsAsTwoSteps() throws Exception {
        BrowserScenarios.run("budget-history.test.mjs", "two budgets published at different times are two steps "
                + "against measured power", port, Map.of("WATTGRAPH_T1", String.valueOf(t1),
                "WATTGRAPH_T2", String.valueOf(t2)));
    }

    @Test
    @Order(5)
    void aRestartedServiceServesTheHistoryFromNeo4j() throws Exception {
        try (ConfigurableApplicationContext again = new SpringApplicationBuilder(GraphServiceApplication.class)
                .properties("spring.main.banner-mode=off")
                .run("--server.port=0", "--wattgraph.neo4j.uri=" + NEO4J.boltUri())) {
            int p = Integer.parseInt(again.getEnvironment().getProperty("local.server.port"));
            assertThat(watts(history(p, "?host=host-h"))).containsExactly(40.0, 60.0);
        }
    }
}
