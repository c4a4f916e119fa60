package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.MeterRegistry;
import io.wattgraph.graph.power.BudgetPublisher;
import io.wattgraph.schema.PowerBudget;
import io.wattgraph.schema.PowerBudgetPolicy;
import io.wattgraph.schema.WattgraphSchemas;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The budget control loop against a real Kafka broker (local stack) and the fixture graph in the harness
 * Neo4j: records decode, are keyed by host, carry increasing sequences, the configured bounds and the
 * previous budget; the REST view; MANUAL budgets need an admin token. The loop's period is an hour, so the
 * test drives cycles itself (plus the one the loop runs at start).
 */
@DirtiesContext // stops this context's loop and producer when the class is done
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.auth.enabled=true", "wattgraph.auth.read-tokens=reader", "wattgraph.auth.admin-tokens=admin",
        "wattgraph.power.budgets.enabled=true", "wattgraph.power.budgets.period=1h",
        "wattgraph.power.budgets.policy=hyppo",
        "wattgraph.power.budgets.hosts[host-a].min-watts=20", "wattgraph.power.budgets.hosts[host-a].max-watts=120",
        "wattgraph.power.budgets.default-min-watts=10", "wattgraph.power.budgets.default-max-watts=100",
        "wattgraph.power.budgets.kafka-timeout=5s",
        "logging.level.kafka=WARN", "logging.level.org.apache.kafka=WARN", "logging.level.state.change.logger=WARN"})
class BudgetPublisherTest {

    static final String TOPIC = "budgets-" + UUID.randomUUID();

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
        registry.add("wattgraph.power.budgets.bootstrap-servers", TestKafka::bootstrap);
        registry.add("wattgraph.power.budgets.topic", () -> TOPIC);
    }

    @Autowired
    private TestRestTemplate rest;

    @Autowired
    private BudgetPublisher publisher;

    @Autowired
    private MeterRegistry registry;

    private final ObjectMapper json = new ObjectMapper();

    @Test
    void cyclesPublishDecodableBudgetsKeyedByHostWithIncreasingSequencesAndBounds() throws Exception {
        publisher.runCycle();
        List<BudgetPublisher.Outcome> last = publisher.runCycle();
        assertThat(last).extracting(BudgetPublisher.Outcome::published).containsOnly(true);
        assertThat(last).extracting(o -> o.budget().hostId()).containsExactly("host-a", "host-b");

        List<ConsumerRecord<String, byte[]>> records = consumeUntil(TOPIC, last);
        Map<String, PowerBudget> previous = new HashMap<>();
        for (ConsumerRecord<String, byte[]> r : records) {
            PowerBudget b = WattgraphSchemas.powerBudgetDecoder().decode(r.value());
            assertThat(r.key()).isEqualTo(b.getHostId());
            PowerBudget before = previous.put(b.getHostId(), b);
            if (b.getPolicy() == PowerBudgetPolicy.MANUAL) {
                continue; // another test's MANUAL budgets share the topic
            }
            assertThat(b.getPolicy()).isEqualTo(PowerBudgetPolicy.HYPPO);
            assertThat(b.getValidUntilNs()).isEqualTo(b.getComputedAtNs() + Duration.ofHours(3).toNanos());
            assertThat(b.getSequence()).isGreaterThanOrEqualTo(b.getComputedAtNs());
            if (b.getHostId().equals("host-a")) {
                // Configured bounds; the fixture's 3.5 W of nginx is raised to the minimum.
                assertThat(b.getMinWatts()).isEqualTo(20.0);
                assertThat(b.getMaxWatts()).isEqualTo(120.0);
                assertThat(b.getBudgetWatts()).isEqualTo(20.0);
                // Host state from the graph: 3.5 W on host-a, all of it nginx's container, so idle 0.
                assertThat(b.getReason()).startsWith("Eq. 4.1: idle 0.00 W + 1 containers 3.50 W")
                        .contains("raised to the host minimum 20.00 W");
            } else {
                assertThat(b.getHostId()).isEqualTo("host-b"); // found in the graph: the default bounds
                assertThat(b.getMinWatts()).isEqualTo(10.0);
                assertThat(b.getMaxWatts()).isEqualTo(100.0);
                assertThat(b.getBudgetWatts()).isEqualTo(10.0);
            }
            if (before == null) {
                assertThat(b.getPreviousWatts()).isNull();
                assertThat(b.getReason()).endsWith("; first budget for the host");
            } else {
                assertThat(b.getSequence()).isGreaterThan(before.getSequence());
                assertThat(b.getPreviousWatts()).isEqualTo(before.getBudgetWatts());
            }
        }
        assertThat(previous).containsKeys("host-a", "host-b");

        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, TestKafka.bootstrap()))) {
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
            Config config = admin.describeConfigs(List.of(topic)).all().get().get(topic);
            assertThat(config.get("cleanup.policy").value()).isEqualTo("compact");
        }
        assertThat(registry.get("wattgraph.power.budgets.published").tag("policy", "hyppo").counter().count())
                .isGreaterThanOrEqualTo(4);
    }

    @Test
    void currentBudgetsAreServedToReadersAndTheSameComputationAnswersThePost() throws Exception {
        List<BudgetPublisher.Outcome> cycle = publisher.runCycle();
        ResponseEntity<String> current = call(HttpMethod.GET, "/api/v1/power/budgets/current", "reader", null);
        assertThat(current.getStatusCode()).isEqualTo(HttpStatus.OK);
        JsonNode body = json.readTree(current.getBody());
        assertThat(body.get("enabled").asBoolean()).isTrue();
        assertThat(body.get("topic").asText()).isEqualTo(TOPIC);
        Map<String, JsonNode> byHost = new HashMap<>();
        body.get("budgets").forEach(b -> byHost.put(b.get("hostId").asText(), b));
        for (BudgetPublisher.Outcome o : cycle) {
            JsonNode b = byHost.get(o.budget().hostId());
            assertThat(b).as(o.budget().hostId()).isNotNull();
            // Later cycles (none run here) could only raise it; MANUAL from the other test may also be newer.
            assertThat(b.get("sequence").asLong()).isGreaterThanOrEqualTo(o.budget().sequence());
        }
        JsonNode a = byHost.get("host-a");
        assertThat(a.get("minWatts").asDouble()).isEqualTo(20.0);
        assertThat(a.get("maxWatts").asDouble()).isEqualTo(120.0);
        assertThat(call(HttpMethod.GET, "/api/v1/power/budgets/current", null, null).getStatusCode())
                .isEqualTo(HttpStatus.UNAUTHORIZED);

        // POST /power/budgets runs the same computation on the hosts it is given.
        ResponseEntity<String> post = call(HttpMethod.POST, "/api/v1/power/budgets", "admin", Map.of("policy", "hyppo",
                "hosts", List.of(Map.of("host", "host-a", "currentPowerW", 3.5, "actionablePowerW", 3.5,
                        "idlePowerW", 0.0, "minW", 20.0, "maxW", 120.0))));
        assertThat(post.getStatusCode()).as(post.getBody()).isEqualTo(HttpStatus.OK);
        assertThat(json.readTree(post.getBody()).at("/budgets/0/budgetW").asDouble()).isEqualTo(20.0);
    }

    @Test
    void manualBudgetsNeedAnAdminAndArePublishedUntilCleared() throws Exception {
        Map<String, Object> manual = Map.of("host", "host-a", "watts", 75.5, "reason", "load test 🔋");
        assertThat(call(HttpMethod.POST, "/api/v1/power/budgets/manual", null, manual).getStatusCode())
                .isEqualTo(HttpStatus.UNAUTHORIZED);
        assertThat(call(HttpMethod.POST, "/api/v1/power/budgets/manual", "reader", manual).getStatusCode())
                .isEqualTo(HttpStatus.FORBIDDEN);
        ResponseEntity<String> outside = call(HttpMethod.POST, "/api/v1/power/budgets/manual", "admin",
                Map.of("host", "host-a", "watts", 500));
        assertThat(outside.getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
        assertThat(json.readTree(outside.getBody()).get("parameter").asText()).isEqualTo("watts");

        ResponseEntity<String> set = call(HttpMethod.POST, "/api/v1/power/budgets/manual", "admin", manual);
        assertThat(set.getStatusCode()).as(set.getBody()).isEqualTo(HttpStatus.OK);
        JsonNode outcome = json.readTree(set.getBody());
        assertThat(outcome.get("published").asBoolean()).isTrue();
        assertThat(outcome.at("/budget/policy").asText()).isEqualTo("MANUAL");
        assertThat(outcome.at("/budget/budgetWatts").asDouble()).isEqualTo(75.5);
        assertThat(outcome.at("/budget/reason").asText()).startsWith("set by an administrator: load test 🔋; ");
        long manualSequence = outcome.at("/budget/sequence").asLong();

        // The loop renews the MANUAL budget with a higher sequence while it is set ...
        List<BudgetPublisher.Outcome> renewed = publisher.runCycle();
        BudgetPublisher.Outcome a = renewed.stream().filter(o -> o.budget().hostId().equals("host-a")).findFirst()
                .orElseThrow();
        assertThat(a.budget().policy()).isEqualTo("MANUAL");
        assertThat(a.budget().sequence()).isGreaterThan(manualSequence);
        assertThat(a.budget().previousWatts()).isEqualTo(75.5);
        assertThat(a.budget().reason()).endsWith("; unchanged at 75.50 W");
        assertThat(call(HttpMethod.DELETE, "/api/v1/power/budgets/manual/host-a", "reader", null).getStatusCode())
                .isEqualTo(HttpStatus.FORBIDDEN);
        assertThat(call(HttpMethod.DELETE, "/api/v1/power/budgets/manual/host-a", "admin", null).getStatusCode())
                .isEqualTo(HttpStatus.NO_CONTENT);
        // ... and the policy takes over again once it is cleared.
        List<BudgetPublisher.Outcome> after = publisher.runCycle();
        BudgetPublisher.Outcome back = after.stream().filter(o -> o.budget().hostId().equals("host-a")).findFirst()
                .orElseThrow();
        assertThat(back.budget().policy()).isEqualTo("HYPPO");
        assertThat(back.budget().previousWatts()).isEqualTo(75.5);
        assertThat(back.budget().reason()).endsWith("; down from 75.50 W");

        List<ConsumerRecord<String, byte[]>> records = consumeUntil(TOPIC, after);
        List<PowerBudget> hostA = new ArrayList<>();
        for (ConsumerRecord<String, byte[]> r : records) {
            if (r.key().equals("host-a")) {
                hostA.add(WattgraphSchemas.powerBudgetDecoder().decode(r.value()));
            }
        }
        assertThat(hostA).extracting(PowerBudget::getSequence).contains(manualSequence, a.budget().sequence());
        for (int i = 1; i < hostA.size(); i++) {
            assertThat(hostA.get(i).getSequence()).isGreaterThan(hostA.get(i - 1).getSequence());
        }
        PowerBudget m = hostA.stream().filter(b -> b.getSequence() == manualSequence).findFirst().orElseThrow();
        assertThat(m.getPolicy()).isEqualTo(PowerBudgetPolicy.MANUAL);
        assertThat(m.getReason()).isEqualTo(outcome.at("/budget/reason").asText());
    }

    private ResponseEntity<String> call(HttpMethod method, String path, String token, Object body) {
        HttpHeaders headers = new HttpHeaders();
        if (token != null) {
            headers.setBearerAuth(token);
        }
        return rest.exchange(path, method, new HttpEntity<>(body, headers), String.class);
    }

    /**
     * Every record of the (single-partition) topic from the start until all of {@code last} were read. Kafka
     * acknowledged them before runCycle returned, so this ends as soon as the consumer has caught up.
     */
    static List<ConsumerRecord<String, byte[]>> consumeUntil(String topic, List<BudgetPublisher.Outcome> last) {
        return consumeUntil(TestKafka.bootstrap(), topic, last);
    }

    static List<ConsumerRecord<String, byte[]>> consumeUntil(String bootstrap, String topic,
                                                             List<BudgetPublisher.Outcome> last) {
        Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        Map<String, Long> wanted = new HashMap<>();
        last.stream().filter(BudgetPublisher.Outcome::published)
                .forEach(o -> wanted.put(o.budget().hostId(), o.budget().sequence()));
        List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(config, new StringDeserializer(),
                new ByteArrayDeserializer())) {
            TopicPartition p = new TopicPartition(topic, 0);
            consumer.assign(List.of(p));
            consumer.seekToBeginning(List.of(p));
            long end = consumer.endOffsets(List.of(p)).get(p);
            while (consumer.position(p) < end) {
                for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    out.add(r);
                }
            }
        }
        for (var w : wanted.entrySet()) {
            assertThat(out.stream().filter(r -> r.key().equals(w.getKey())).map(r -> decode(r).getSequence()))
                    .as("record of %s with sequence %d on %s", w.getKey(), w.getValue(), topic)
                    .contains(w.getValue());
        }
        return out;
    }

    static PowerBudget decode(ConsumerRecord<String, byte[]> r) {
        try {
            return WattgraphSchemas.powerBudgetDecoder().decode(r.value());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
