package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.schema.PowerBudget;
import io.wattgraph.schema.PowerBudgetPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The loop on its own schedule with the PRESTO policy: without any help from the test it publishes budget
 * after budget for the fixture's hosts. Waits for records, never asserts how long they took.
 */
@DirtiesContext // stops this context's loop and producer when the class is done
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.NONE, properties = {
        "wattgraph.power.budgets.enabled=true", "wattgraph.power.budgets.period=200ms",
        "wattgraph.power.budgets.policy=presto", "wattgraph.power.budgets.sla-ms=10",
        "wattgraph.power.budgets.default-min-watts=15", "wattgraph.power.budgets.default-max-watts=150",
        "logging.level.kafka=WARN", "logging.level.org.apache.kafka=WARN", "logging.level.state.change.logger=WARN"})
class BudgetLoopScheduleTest {

    static final String TOPIC = "budgets-schedule-" + UUID.randomUUID();

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
        registry.add("wattgraph.power.budgets.bootstrap-servers", TestKafka::bootstrap);
        registry.add("wattgraph.power.budgets.topic", () -> TOPIC);
    }

    @Test
    void theLoopPublishesEveryPeriodOnItsOwn() {
        List<PowerBudget> hostA = new ArrayList<>();
        Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, TestKafka.bootstrap(),
                ConsumerConfig.GROUP_ID_CONFIG, "schedule-test", ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(config, new StringDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(TOPIC));
            // A hang guard only (the suite must end): three budgets normally arrive within a second.
            long guard = System.nanoTime() + Duration.ofMinutes(3).toNanos();
            while (hostA.size() < 3 && System.nanoTime() < guard) {
                for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    PowerBudget b = BudgetPublisherTest.decode(r);
                    assertThat(r.key()).isEqualTo(b.getHostId());
                    if (b.getHostId().equals("host-a")) {
                        hostA.add(b);
                    }
                }
            }
        }
        assertThat(hostA).hasSizeGreaterThanOrEqualTo(3);
        for (int i = 0; i < hostA.size(); i++) {
            PowerBudget b = hostA.get(i);
            assertThat(b.getPolicy()).isEqualTo(PowerBudgetPolicy.PRESTO);
            assertThat(b.getMinWatts()).isEqualTo(15.0);
            assertThat(b.getMaxWatts()).isEqualTo(150.0);
            assertThat(b.getBudgetWatts()).isBetween(15.0, 150.0);
            assertThat(b.getValidUntilNs() - b.getComputedAtNs()).isEqualTo(Duration.ofMillis(600).toNanos());
            if (i == 0) {
                assertThat(b.getPreviousWatts()).isNull();
            } else {
                assertThat(b.getSequence()).isGreaterThan(hostA.get(i - 1).getSequence());
                assertThat(b.getPreviousWatts()).isEqualTo(hostA.get(i - 1).getBudgetWatts());
            }
        }
    }
}
