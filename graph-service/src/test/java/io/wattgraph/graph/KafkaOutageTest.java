package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.MeterRegistry;
import io.wattgraph.graph.power.BudgetPublisher;
import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.schema.PowerBudget;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Kafka down at start, then up, down and up again (a real broker restarted on the same ports and data): the
 * loop never stops, counts the failures, keeps serving the REST view, and publishes the latest budget once
 * Kafka is back; what reaches the topic has strictly increasing sequences per host, and no budget that was
 * reported as failed turns up late.
 */
@DirtiesContext // stops this context's loop and producer when the class is done
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.power.budgets.enabled=true", "wattgraph.power.budgets.period=1h",
        "wattgraph.power.budgets.policy=hyppo",
        "wattgraph.power.budgets.hosts[host-a].min-watts=20", "wattgraph.power.budgets.hosts[host-a].max-watts=120",
        "wattgraph.power.budgets.hosts[host-c].min-watts=30", "wattgraph.power.budgets.hosts[host-c].max-watts=90",
        "wattgraph.power.budgets.kafka-timeout=1s", "wattgraph.power.budgets.topic=wattgraph.power-budgets",
        "logging.level.kafka=WARN", "logging.level.org.apache.kafka=ERROR", "logging.level.state.change.logger=WARN"})
class KafkaOutageTest {

    static final int PORT;
    static final int CONTROLLER_PORT;

    static {
        try {
            PORT = TestKafka.freePort();
            CONTROLLER_PORT = TestKafka.freePort();
        } catch (Exception e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
        registry.add("wattgraph.power.budgets.bootstrap-servers", () -> "127.0.0.1:" + PORT);
    }

    @Autowired
    private BudgetPublisher publisher;

    @Autowired
    private TestRestTemplate rest;

    @Autowired
    private MeterRegistry registry;

    private final ObjectMapper json = new ObjectMapper();

    @Test
    void theLoopOutlivesKafkaOutagesAndPublishesTheLatestBudgetWhenKafkaReturns() throws Exception {
        List<BudgetPublisher.Outcome> failed = new ArrayList<>();
        List<BudgetPublisher.Outcome> published = new ArrayList<>();

        // 1. Nothing listens yet: the cycle computes, counts a failure, returns.
        List<BudgetPublisher.Outcome> down = publisher.runCycle();
        assertThat(down).extracting(o -> o.budget().hostId()).containsExactly("host-a", "host-c");
        assertThat(down).extracting(BudgetPublisher.Outcome::published).containsOnly(false);
        failed.addAll(down);
        assertThat(registry.get("wattgraph.power.budgets.failures").tag("stage", "topic").counter().count())
                .isGreaterThanOrEqualTo(1);
        ResponseEntity<String> current = rest.getForEntity("/api/v1/power/budgets/current", String.class);
        assertThat(current.getStatusCode()).isEqualTo(HttpStatus.OK);
        JsonNode status = json.readTree(current.getBody());
        assertThat(status.get("budgets")).isEmpty();
        assertThat(status.get("lastComputed")).hasSize(2);
        assertThat(status.get("lastError").asText()).contains("not ready");

        Path data = Files.createTempDirectory(Files.createDirectories(Path.of("target", "kafka")), "outage-");
        KafkaBroker broker = TestKafka.start(data, PORT, CONTROLLER_PORT);
        try {
            // 2. Kafka is up: the next cycle publishes fresh budgets.
            List<BudgetPublisher.Outcome> up = cycleUntilPublished(failed);
            published.addAll(up);
            assertThat(up).extracting(o -> o.budget().previousWatts()).containsOnlyNulls();
        } finally {
            broker.close();
        }

        // 3. Kafka goes away after the topic and producer exist: sends fail, nothing crashes.
        double sendFailures = registry.get("wattgraph.power.budgets.failures").tag("stage", "send").counter().count();
        List<BudgetPublisher.Outcome> again = publisher.runCycle();
        assertThat(again).extracting(BudgetPublisher.Outcome::published).containsOnly(false);
        failed.addAll(again);
        assertThat(registry.get("wattgraph.power.budgets.failures").tag("stage", "send").counter().count())
                .isGreaterThan(sendFailures);
        assertThat(rest.getForEntity("/api/v1/power/budgets/current", String.class).getStatusCode())
                .isEqualTo(HttpStatus.OK);

        // 4. Kafka restarts on the same ports and data: the latest budget is published with a higher sequence.
        broker = TestKafka.start(data, PORT, CONTROLLER_PORT);
        try {
            List<BudgetPublisher.Outcome> back = cycleUntilPublished(failed);
            published.addAll(back);
            Map<String, Double> before = new HashMap<>();
            published.forEach(o -> before.putIfAbsent(o.budget().hostId(), o.budget().budgetWatts()));
            for (BudgetPublisher.Outcome o : back) {
                assertThat(o.budget().previousWatts()).isEqualTo(before.get(o.budget().hostId()));
            }

            List<ConsumerRecord<String, byte[]>> records = BudgetPublisherTest.consumeUntil(broker.bootstrapServers(),
                    "wattgraph.power-budgets", back);
            Map<String, Long> lastSequence = new HashMap<>();
            Set<Long> onTopic = new HashSet<>();
            for (ConsumerRecord<String, byte[]> r : records) {
                PowerBudget b = BudgetPublisherTest.decode(r);
                Long prev = lastSequence.put(b.getHostId(), b.getSequence());
                if (prev != null) {
                    assertThat(b.getSequence()).as("sequence of %s", b.getHostId()).isGreaterThan(prev);
                }
                onTopic.add(b.getSequence());
            }
            assertThat(onTopic).containsAll(published.stream().map(o -> o.budget().sequence()).toList());
            assertThat(onTopic).doesNotContainAnyElementsOf(failed.stream().map(o -> o.budget().sequence()).toList());
        } finally {
            broker.close();
        }
    }

    /**
     * Runs cycles until one publishes every host (the clients may need a cycle to reconnect); the failed ones
     * go to {@code failed}. Bounded by a number of cycles, not by time.
     */
    private List<BudgetPublisher.Outcome> cycleUntilPublished(List<BudgetPublisher.Outcome> failed) {
        for (int attempt = 0; attempt < 20; attempt++) {
            List<BudgetPublisher.Outcome> outcomes = publisher.runCycle();
            outcomes.stream().filter(o -> !o.published()).forEach(failed::add);
            if (outcomes.stream().allMatch(BudgetPublisher.Outcome::published)) {
                return outcomes;
            }
        }
        throw new AssertionError("Kafka is up but 20 cycles did not publish; last error: "
                + publisher.status().lastError());
    }
}
