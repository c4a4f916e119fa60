package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.graph.power.BudgetPublisher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The page's published-budgets panel with the budget loop on, publishing to the shared local-stack Kafka broker
 * ({@link TestKafka}) from the fixture graph in the harness Neo4j, rendered by headless Chromium
 * ({@link ServiceMapBrowserTest#chromium}). Screenshot and DOM kept under {@code target/screenshots/}.
 */
@DirtiesContext // stops this context's loop and producer when the class is done
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.power.budgets.enabled=true", "wattgraph.power.budgets.period=1h",
        "wattgraph.power.budgets.policy=hyppo",
        "wattgraph.power.budgets.hosts[host-a].min-watts=20", "wattgraph.power.budgets.hosts[host-a].max-watts=120",
        "wattgraph.power.budgets.default-min-watts=10", "wattgraph.power.budgets.default-max-watts=100",
        "wattgraph.power.budgets.kafka-timeout=5s",
        "logging.level.kafka=WARN", "logging.level.org.apache.kafka=WARN", "logging.level.state.change.logger=WARN"})
class ServiceMapBudgetLoopBrowserTest {

    static final String TOPIC = "ui-budgets-" + UUID.randomUUID();

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
        registry.add("wattgraph.power.budgets.bootstrap-servers", TestKafka::bootstrap);
        registry.add("wattgraph.power.budgets.topic", () -> TOPIC);
    }

    @BeforeAll
    static void requireChromium() {
        ServiceMapBrowserTest.requireChromiumOrSkip();
    }

    @LocalServerPort
    private int port;

    @Autowired
    private BudgetPublisher publisher;

    @Test
    void panelShowsThePublishedBudgetOfEveryHost() throws Exception {
        // Two cycles: every host has a published budget, and a previous one.
        publisher.runCycle();
        List<BudgetPublisher.Outcome> last = publisher.runCycle();
        assertThat(last).extracting(BudgetPublisher.Outcome::published).containsOnly(true);

        String url = "http://127.0.0.1:" + port + "/";
        Path shots = Files.createDirectories(Path.of("target", "screenshots"));
        Path png = shots.resolve("service-map-budget-loop.png").toAbsolutePath();
        Files.deleteIfExists(png);
        ServiceMapBrowserTest.chromium(List.of("--screenshot=" + png, "--window-size=1400,1300",
                "--virtual-time-budget=5000", url));
        assertThat(png).exists();
        String dom = ServiceMapBrowserTest.chromium(List.of("--window-size=1400,1300", "--virtual-time-budget=5000",
                "--dump-dom", url));
        Files.writeString(shots.resolve("service-map-budget-loop.html"), dom);

        assertThat(dom).contains("data-loaded=\"true\"").contains("id=\"loopBudgets\"")
                .doesNotContain("id=\"budgetLoopOff\"").doesNotContain("id=\"budgetLoopError\"");
        assertThat(ServiceMapBrowserTest.count(dom, "data-budget-host=")).isEqualTo(2);
        // host-a: its own bounds, the fixture's 3.5 W raised to the 20 W minimum; host-b: the default bounds.
        assertThat(dom).contains("data-budget-host=\"host-a\" data-budget-watts=\"20\" data-budget-policy=\"HYPPO\"")
                .contains("data-bounds=\"20.00–120.00\"")
                .contains("data-budget-host=\"host-b\" data-budget-watts=\"10\" data-budget-policy=\"HYPPO\"")
                .contains("data-bounds=\"10.00–100.00\"")
                .contains("raised to the host minimum 20.00 W")
                .contains("hyppo every 3600 s to " + TOPIC);
    }
}
