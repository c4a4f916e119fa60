package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.schema.PowerBudget;
import io.wattgraph.schema.PowerBudgetPolicy;
import io.wattgraph.schema.WattgraphSchemas;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The power-cap loop's node end through a real Kafka broker: PowerBudget records on the compacted
 * budgets topic (the graph service's contract, encoded by the shared schema) reach a real agent, which
 * writes the package limits of a fixture powercap tree (this machine has no RAPL), ignores an older
 * sequence and another host's budget, and writes the original limits back when it stops.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PowerCapEndToEndTest {
  private static final String TOPIC = "wattgraph.power-budgets";
  private static final String HOST = "cap-host";
  private static final long ORIGINAL_UW = 165_000_000L;
  private static final Path WORK = Path.of("target", "system-test-powercap").toAbsolutePath();

  private KafkaBroker kafka;
  private KafkaProducer<String, byte[]> producer;
  private Path powercap;

  @BeforeAll
  void start() throws Exception {
    Preconditions.requireRoot();
    Files.createDirectories(WORK);
    kafka = KafkaBroker.start(WORK.resolve("kafka-" + System.nanoTime()), 0, 0);
    kafka.createTopic(TOPIC, 1, Map.of("cleanup.policy", "compact"));
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    producer = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer());
    powercap = WORK.resolve("powercap-" + System.nanoTime());
    for (int s = 0; s < 2; s++) {
      Path z = powercap.resolve("intel-rapl:" + s);
      Files.createDirectories(z);
      Files.writeString(z.resolve("name"), "package-" + s + "\n");
      Files.writeString(z.resolve("energy_uj"), "1000\n");
      Files.writeString(z.resolve("max_energy_range_uj"), "262143328850\n");
      Files.writeString(z.resolve("constraint_0_name"), "long_term\n");
      Files.writeString(z.resolve("constraint_0_power_limit_uw"), ORIGINAL_UW + "\n");
      Files.writeString(z.resolve("constraint_0_max_power_uw"), ORIGINAL_UW + "\n");
      Files.writeString(z.resolve("max_power_range_uw"), "200000000\n");
    }
  }

  @AfterAll
  void stop() {
    for (AutoCloseable c : new AutoCloseable[] {producer, kafka}) {
      try {
        if (c != null) {
          c.close();
        }
      } catch (Exception e) {
        System.err.println("teardown: " + e);
      }
    }
  }

  private void publish(String host, long sequence, double watts) throws Exception {
    long now = System.currentTimeMillis() * 1_000_000L;
    PowerBudget b = PowerBudget.newBuilder()
        .setHostId(host).setSequence(sequence).setPolicy(PowerBudgetPolicy.MANUAL)
        .setComputedAtNs(now).setValidUntilNs(now + TimeUnit.MINUTES.toNanos(10))
        .setBudgetWatts(watts).setMinWatts(50).setMaxWatts(400).setPreviousWatts(null)
        .setReason("system test: " + watts + " W").build();
    ByteBuffer buf = WattgraphSchemas.powerBudgetEncoder().encode(b);
    byte[] value = new byte[buf.remaining()];
    buf.get(value);
    producer.send(new ProducerRecord<>(TOPIC, host, value)).get();
  }

  private List<Long> limits() throws Exception {
    return List.of(limit(0), limit(1));
  }

  private long limit(int socket) throws Exception {
    return Long.parseLong(Files.readString(
        powercap.resolve("intel-rapl:" + socket).resolve("constraint_0_power_limit_uw")).trim());
  }

  private static void await(String what, BooleanSupplier cond, AgentProcess agent) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!cond.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what + "; agent log:\n" + agent.logText());
      Thread.sleep(100);
    }
  }

  private BooleanSupplier limitsAre(long uw) {
    return () -> {
      try {
        return limits().equals(List.of(uw, uw));
      } catch (Exception e) {
        return false;
      }
    };
  }

  @Test
  void budgetsFromKafkaCapThePackagesAndStoppingRestoresThem() throws Exception {
    // Before the agent starts: an older budget and the newest one for this host, and another host's.
    publish(HOST, 1, 300);
    publish(HOST, 2, 100);
    publish("other-host", 9, 60);
    AgentProcess agent = new AgentProcess(Preconditions.agentBinary(), HOST, Path.of("/proc/self/ns/net"),
        kafka.bootstrapServers(), WORK.resolve("agents"), List.of("--no-resources", "--power-cap", "on",
            "--powercap-root", powercap.toString(), "--power-floor-watts", "80",
            "--power-cap-state-file", powercap + ".state"));
    try {
      // The newest (100 W) over two packages: 50 W each.
      await("the 100 W budget", limitsAre(50_000_000L), agent);
      // An older sequence changes nothing; a newer one applies (the host floor of 80 W, 40 W a package, clamps 2 x 35 W).
      publish(HOST, 1, 300);
      publish(HOST, 3, 70);
      await("the 70 W budget, floored", limitsAre(40_000_000L), agent);
      assertTrue(agent.logText().contains("seq 3"), agent.logText());
      assertTrue(!agent.logText().contains("seq 9"), "another host's budget must not apply:\n" + agent.logText());
      assertEquals(0, agent.stop(), "agent exit code");
      assertEquals(List.of(ORIGINAL_UW, ORIGINAL_UW), limits(), "original limits restored on stop");
      assertTrue(!Files.exists(Path.of(powercap + ".state")), "state file removed at the clean stop");
    } finally {
      agent.close();
    }
  }
}
