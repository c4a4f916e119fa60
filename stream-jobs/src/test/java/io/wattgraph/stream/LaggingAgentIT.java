package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.schema.WindowMetrics;
import io.wattgraph.stream.window.LateSampleCounter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The order of arrivals after a Kafka outage, through the whole job with the default event-time
 * settings, against local-stack's real Kafka and Neo4j: both agents report (samples and the two ends
 * of one connection's TransactionStats), then host-b goes on reporting for 90 s of event time while
 * host-a's records of the first 30 s of it stay in its spool, and arrive only once the windows they
 * belong to have fired on host-b's records (a minute behind the watermark). The agents' spools hold
 * such a lag (an outage drains agent by agent, the first one back moves the watermark to the present);
 * every one of host-a's records must be counted in its windows (late revisions), none dropped.
 *
 * <p>Before the fix (30 s allowed lateness) every record of host-a's spool was dropped as late:
 * the edge windows kept the server's transactions only and {@code lateSamplesDropped} counted them.
 */
class LaggingAgentIT {
  static final long T0 = ResourceMetricsIT.T0;
  static final long S = ResourceMetricsIT.S;
  static final long MS = 1_000_000L;
  static final String EDGE = "P:" + TransactionMetricsIT.P1 + ">P:" + TransactionMetricsIT.P2;
  /** Transactions per agent interval (1 s) and end. */
  static final long PER_INTERVAL = 7;

  static StreamJobHarness stack;

  @BeforeAll
  static void startStack() throws Exception {
    stack = StreamJobHarness.start("lagging-agent");
  }

  @AfterAll
  static void stopStack() {
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void anAgentAMinuteBehindTheOthersIsCountedInItsWindows() throws Exception {
    JobConfig c = StreamJobHarness.withTopics(stack.config("lagging-agent"), "l");
    stack.createTopics(2, c.topic, c.serviceMappingsTopic, c.resourcesTopic, c.transactionsTopic, c.metricsTopic,
        c.namespaceMetricsTopic, c.edgeMetricsTopic, c.dlqTopic);
    // Two partitions and subtasks, as local-stack's topics: each agent's samples on a partition of
    // their own (keyed by host), the connection's records of both agents on one (keyed by connection).
    c.parallelism = 2;
    c.checkpointIntervalMs = 500;
    // Window, lateness, out-of-orderness and idleness: the job's defaults, what a deployment runs.
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    long lateBefore = LateSampleCounter.DROPPED.get();
    JobClient job = env.executeAsync("lagging-agent-it");
    try {
      // Both current for the first window, so each end knows its peer and its process's group.
      stack.produce(records("host-a", 1, 10));
      stack.produce(records("host-b", 1, 10));
      // host-b goes on to 100 s; host-a's 11..40 s wait in its spool.
      stack.produce(records("host-b", 11, 100));
      long lastClosed = T0 + 90 * S;
      stack.await(() -> edgeWindows().containsKey(lastClosed),
          () -> "host-b's windows up to " + lastClosed + " fired: " + edgeWindows().keySet());
      // Now host-a's spool: 50 s and more behind the watermark (the window ending at 90 s has fired).
      stack.produce(records("host-a", 11, 40));

      Map<Long, String> want = new TreeMap<>();
      for (long end = T0 + 10 * S; end <= lastClosed; end += 10 * S) {
        long client = end <= T0 + 40 * S ? 10 * PER_INTERVAL : 0;
        want.put(end, client + "/" + 10 * PER_INTERVAL);
      }
      // Until exact, or until the job dropped something (then the assertion below says what).
      stack.await(() -> counts(edgeWindows()).equals(want) || LateSampleCounter.DROPPED.get() > lateBefore,
          () -> "edge windows (client/server transactions by window end) " + counts(edgeWindows()) + ", want " + want);
      assertEquals(want, counts(edgeWindows()), "edge windows: client/server transactions by window end");
      assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore, "late inputs dropped");

      // host-a's own windows: its process's CPU samples and transactions, one window state each.
      Map<String, WindowMetrics> m = ResourceMetricsIT.byKeyAndWindow(stack.readAll("l.metrics"));
      for (long end = T0 + 10 * S; end <= T0 + 40 * S; end += 10 * S) {
        WindowMetrics w = m.get("PROCESS|host-a|" + TransactionMetricsIT.P1 + "@" + end);
        assertEquals("10 samples, " + 10 * PER_INTERVAL + " client transactions",
            (w == null ? 0 : w.getSamples()) + " samples, " + (w == null ? 0 : w.getClientTransactions())
                + " client transactions", "host-a's process window ending " + end);
      }
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /**
   * One agent's records for the 1 s intervals ending at {@code from}..{@code to} s after T0: its
   * PROCESS sample (partition by host, as the agents key them) and its end of the connection
   * P1 -> P2 ({@link #PER_INTERVAL} transactions; partition 0, as the agents key by connection).
   */
  static List<ProducerRecord<String, byte[]>> records(String host, int from, int to) throws Exception {
    boolean client = host.equals("host-a");
    List<ProducerRecord<String, byte[]>> out = new ArrayList<>();
    for (int k = from; k <= to; k++) {
      long end = T0 + k * S;
      ResourceSample p = ResourceMetricsIT.sample(ResourceScope.PROCESS, host, end, 20 * MS, 0.5, true, 2, 1);
      p.setIntervalStartNs(end - S);
      p.setTgid(client ? 100 : 200);
      p.setProcessStartTimeNs(client ? 5000 : 6000);
      out.add(new ProducerRecord<>("l.resources", client ? 0 : 1, host, ResourceMetricsIT.encode(p)));
      TransactionStats t = client
          ? TransactionMetricsIT.client(end, PER_INTERVAL, 100, 1000, new long[] {2 * MS}, new long[] {PER_INTERVAL})
          : TransactionMetricsIT.server(end, PER_INTERVAL, 100, 1000, new long[] {MS}, new long[] {PER_INTERVAL});
      out.add(new ProducerRecord<>("l.transactions", 0, "10.0.0.1:40000>10.0.0.2:8080",
          StreamJobHarness.bytes(TransactionStats.getEncoder().encode(t))));
    }
    return out;
  }

  /** The latest revision of each window of the edge P1 -> P2, by window end (ns). */
  static Map<Long, EdgeMetrics> edgeWindows() {
    Map<Long, EdgeMetrics> out = new TreeMap<>();
    TransactionMetricsIT.edgesByKeyAndWindow(stack.readAll("l.edge-metrics")).forEach((k, e) -> {
      if (k.startsWith(EDGE + "@")) {
        out.put(e.getWindowEndNs(), e);
      }
    });
    return out;
  }

  static Map<Long, String> counts(Map<Long, EdgeMetrics> windows) {
    Map<Long, String> out = new TreeMap<>();
    windows.forEach((end, e) -> out.put(end, e.getClientTransactions() + "/" + e.getServerTransactions()));
    return out;
  }
}
