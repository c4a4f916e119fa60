package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Real outages under short-connection load between two namespace hosts, each with its own real
 * agent, through local-stack's Kafka (its own process), the production job and Neo4j; afterwards
 * every figure of the graph must equal what the load generators counted.
 */
class OutageEndToEndTest {
  static final int SUBNET = 79;
  static final long CONNECTIONS = 12_000;
  static final long PER_SECOND = 400;
  /**
   * How long the broker is down (its restart adds several seconds). The agent back first brings the
   * job's event time to the present, so the other's spooled records reach it about this far behind.
   */
  static final long OUTAGE_MS = 45_000;

  private OutageStack stack;

  @AfterEach
  void tearDown() {
    if (stack != null) {
      stack.close();
    }
  }

  /**
   * The run: the broker killed with SIGKILL in the middle of the load and started again on
   * the same log directory {@link #OUTAGE_MS} later, many times the pairing horizon (1 s here) plus
   * the closed retention (2 s), and longer than the windows' allowed lateness once was (30 s); the
   * client's ports are reused every few seconds. The agents spool meanwhile (asserted) and drop
   * nothing. Afterwards the edge client process → server process has exactly the connections and
   * bytes the generators counted, no External node holds any of them, and the transaction windows
   * hold exactly what the agents delivered.
   */
  @Test
  void aBrokerKilledMidLoadAndRestartedLeavesEveryConnectionOnceOnItsEdge() throws Exception {
    stack = new OutageStack("ko", SUBNET, 2, List.of());
    stack.startAgents();

    ConnectionLoad load = stack.load("load", 0, 1, 8080, CONNECTIONS, PER_SECOND);
    Thread.sleep(8_000);
    stack.kafka.kill();
    Thread.sleep(OUTAGE_MS);
    double spoolA = OutageStack.memorySpool(stack.agentMetrics(0));
    double spoolB = OutageStack.memorySpool(stack.agentMetrics(1));
    stack.kafka.start();
    Map<String, Long> counts = load.finish();
    System.out.printf("outage test: %s; spooled in memory at the restart: host-a %.0f, host-b %.0f records%n", counts,
        spoolA, spoolB);
    assertTrue(spoolA > 0 && spoolB > 0, "both agents spooled while the broker was down: " + spoolA + ", " + spoolB);

    stack.assertExactAfterwards("outage test", load, counts);
  }
}
