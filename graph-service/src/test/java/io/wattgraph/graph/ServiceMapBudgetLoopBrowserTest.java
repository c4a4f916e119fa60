package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.graph.power.BudgetPublisher;
import java.util.List;
import java.util.Map;
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
 * ({@link TestKafka}) from the fixture graph in the harness Neo4j, in Chromium
 * ({@code src/test/browser/budget-loop.test.mjs}). Screenshot under {@code target/screenshots/}.
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
        BrowserScenarios.requireBrowser();
        TestNeo4j.deleteBudgetHistory(); // the chart shows this class's budgets only
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

        BrowserScenarios.run("budget-loop.test.mjs", "the panel shows the published budget of every host", port,
                Map.of("WATTGRAPH_TOPIC", TOPIC));
        BrowserScenarios.run("budget-loop.test.mjs", "the power panel starts from the published bounds and charts "
                + "measured power against the published budget", port, Map.of());
    }
}
