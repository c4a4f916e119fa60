package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Neo4j stopped under short-connection load for longer than the job's checkpoint timeout and its
 * Kafka sinks' transaction timeout (5 and 10 min by default; 20 and 30 s here, so the test takes
 * minutes): the job goes on checkpointing, its Kafka outputs go on (committed meanwhile), and once
 * Neo4j is back the graph is exact; nothing lost, no window twice.
 */
class Neo4jOutageEndToEndTest {
  static final int SUBNET = 81;
  static final long CHECKPOINT_TIMEOUT_MS = 20_000;
  static final long TRANSACTION_TIMEOUT_MS = 30_000;
  static final long OUTAGE_MS = 45_000;

  private OutageStack stack;

  @AfterEach
  void tearDown() {
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void neo4jStoppedLongerThanTheCheckpointAndTransactionTimeoutsLosesNothing() throws Exception {
    Path props = Files.createDirectories(Path.of("target").toAbsolutePath())
        .resolve("neo4j-outage-" + ProcessHandle.current().pid() + ".properties");
    Files.writeString(props, "transaction.timeout.ms=" + TRANSACTION_TIMEOUT_MS + "\n");
    stack = new OutageStack("no", SUBNET, List.of("--checkpoint-timeout-ms", String.valueOf(CHECKPOINT_TIMEOUT_MS),
        "--kafka-properties", props.toString()));
    stack.add(() -> Files.deleteIfExists(props));
    stack.startAgents(List.of(), List.of());

    ConnectionLoad load = stack.load("neo4j-down", 8080, 12_000, 400);
    Thread.sleep(5_000);
    String client = "host-a/" + load.client().pid() + "/";
    String server = "host-b/" + load.server().pid() + "/";
    long before = EdgeWindows.read(stack.kafka.bootstrapServers(), client, server).clientTransactions();
    stack.stopNeo4j();
    // The job's states meanwhile, in order (a restart shows as RESTARTING).
    List<String> states = new ArrayList<>();
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(OUTAGE_MS);
    while (System.nanoTime() < end) {
      String now = stack.job.status();
      if (states.isEmpty() || !states.get(states.size() - 1).equals(now)) {
        states.add(now);
      }
      Thread.sleep(1000);
    }
    EdgeWindows during = EdgeWindows.read(stack.kafka.bootstrapServers(), client, server);
    stack.startNeo4j();
    Map<String, Long> counts = load.finish();
    System.out.printf("neo4j outage: %s; job states during it %s; windows committed on Kafka before it %d, by its end %s%n",
        counts, states, before, during);
    stack.assertExactAfterwards("neo4j outage", load, counts);
    assertEquals("RUNNING", stack.job.status());
    assertTrue(during.clientTransactions() > before, "the job's Kafka outputs went on while Neo4j was down: "
        + before + " transactions in committed windows before, " + during + " by the end");
  }
}
