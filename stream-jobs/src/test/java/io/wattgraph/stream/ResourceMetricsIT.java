package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.AttributionWeight;
import io.wattgraph.schema.ContainerRuntime;
import io.wattgraph.schema.NamespaceMetrics;
import io.wattgraph.schema.PowerSource;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import io.wattgraph.schema.TransactionRole;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.schema.WindowMetrics;
import io.wattgraph.stream.sink.kafka.DeadLetterSerializer;
import io.wattgraph.stream.sink.neo4j.Neo4jSettings;
import io.wattgraph.stream.sink.neo4j.NodeMetricsGraphWriter;
import io.wattgraph.stream.window.LateSampleCounter;
import io.wattgraph.stream.window.MetricInput;
import io.wattgraph.stream.window.MetricsRow;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.Value;

/**
 * Windowed metrics through the whole job against local-stack's real Kafka and Neo4j: ResourceSamples
 * of two hosts (one with its clock an hour behind, on its own partition) to the metrics topic
 * (read_committed) and the graph's node properties, all values computed by hand. Window 10 s.
 *
 * <p>Long on purpose: one real Kafka broker and Neo4j per class (their start is most of a test's
 * time), so the cases share the class, and each checks whole windows against values computed by hand.
 */
public class ResourceMetricsIT {
  /** A window boundary, Unix ns. */
  public static final long T0 = 1_700_000_000_000_000_000L;
  /** host-m2's clock is one hour behind. */
  static final long T1 = T0 - 3_600_000_000_000L;
  static final long S = 1_000_000_000L;
  static final long US = 1_000L;
  static final String C1 = "c1".repeat(32);
  static final String P100 = "host-m1/100/5000";
  static final String P200 = "host-m2/200/6000";

  static StreamJobHarness stack;

  @BeforeAll
  static void startStack() throws Exception {
    stack = StreamJobHarness.start("metrics");
  }

  @AfterAll
  static void stopStack() {
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void twoHostsToTheMetricsTopicAndTheGraphExactly() throws Exception {
    String res = "res.bounded";
    stack.kafka.createTopic(res, 2);
    stack.createTopics(1, "conn.bounded", "metrics.bounded", "metrics.bounded.ns", "dlq.bounded");
    // The graph as the connection sink leaves it: P100 in container C1 on host-m1. P200 has no node.
    stack.write("MERGE (h:Host {id: 'host-m1'}) MERGE (p:Process {id: $p}) SET p.hostId = 'host-m1', p.pid = 100, "
        + "p.startTimeNs = 5000, p.comm = 'java', p.containerId = $c MERGE (p)-[:RUNS_ON]->(h) "
        + "MERGE (c:Container {id: $c}) ON CREATE SET c.hostId = 'host-m1' MERGE (p)-[:IN_CONTAINER]->(c) "
        + "MERGE (c)-[:RUNS_ON]->(h)", Map.of("p", P100, "c", C1));

    List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
    // host-m1 on partition 0, MEASURED, 5 s intervals k = 1, 2 (window [T0, T0+10 s)) and 4 ([T0+10 s, T0+20 s)).
    for (int k : new int[] {1, 2, 4}) {
      long end = T0 + (k == 4 ? 15 : 5 * k) * S;
      ResourceSample host = sample(ResourceScope.HOST, "host-m1", end, 3 * k * S, 50.0 * k, true, 10 + k, 5);
      host.setIdlePowerWatts(4.0);
      ResourceSample c1 = sample(ResourceScope.GROUP, "host-m1", end, 2 * k * S, 20.0 * k, true, 4, 2);
      c1.setGroupId(C1);
      c1.setRuntime(ContainerRuntime.CONTAINERD);
      c1.setPodUid("pod-x");
      if (k > 1) {
        // The agent learnt the pod's name after its UID (ResourceSample v3).
        c1.setPodName("checkout-1");
        c1.setPodNamespace("shop");
        c1.setPodLabels(Map.of("app", "checkout"));
      }
      ResourceSample hostGroup = sample(ResourceScope.GROUP, "host-m1", end, k * S, 10.0 * k, true, 6 + k, 3);
      ResourceSample p = sample(ResourceScope.PROCESS, "host-m1", end, 3 * k * S / 2, 15.0 * k, true, 3, 1);
      p.setTgid(100);
      p.setProcessStartTimeNs(5000);
      p.setComm("java");
      p.setGroupId(C1);
      for (ResourceSample s : List.of(host, c1, hostGroup, p)) {
        records.add(new ProducerRecord<>(res, 0, "host-m1", encode(s)));
      }
    }
    // host-m2 on partition 1, ESTIMATED, its clock an hour behind: one window [T1, T1+10 s).
    for (int k : new int[] {1, 2}) {
      long end = T1 + 5 * k * S;
      ResourceSample host = sample(ResourceScope.HOST, "host-m2", end, k * S, 12.0 * k, false, 2, 1);
      host.setIdlePowerWatts(3.0);
      ResourceSample group = sample(ResourceScope.GROUP, "host-m2", end, k * S / 2, 6.0 * k, false, 2, 1);
      ResourceSample p = sample(ResourceScope.PROCESS, "host-m2", end, k * S / 2, 6.0 * k, false, 2, 1);
      p.setTgid(200);
      p.setProcessStartTimeNs(6000);
      p.setComm("python3");
      for (ResourceSample s : List.of(host, group, p)) {
        records.add(new ProducerRecord<>(res, 1, "host-m2", encode(s)));
      }
    }
    ResourceSample noTgid = sample(ResourceScope.PROCESS, "host-m2", T1 + 5 * S, 1, 1.0, false, 1, 1);
    records.add(new ProducerRecord<>(res, 1, "host-m2", encode(noTgid)));
    records.add(new ProducerRecord<>(res, 1, "host-m2", new byte[] {(byte) 0xC3, 0x01, 9}));
    stack.produce(records);

    long lateBefore = LateSampleCounter.DROPPED.get();
    runBounded("metrics-run-1", res, "conn.bounded", "metrics.bounded", "dlq.bounded");

    // The metrics topic, read_committed: 5 rows per window of host-m1 (host, C1, pod-x, host group,
    // P100), 3 of host-m2 (host, host group, P200).
    // Commit markers reach the partitions shortly after the job's last commit returns: wait for them.
    stack.await(() -> byKeyAndWindow(stack.readAll("metrics.bounded")).size() >= 13, "13 window rows committed");
    Map<String, WindowMetrics> m = byKeyAndWindow(stack.readAll("metrics.bounded"));
    assertEquals(13, m.size(), m.keySet()::toString);
    assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore, "skew on its own partition is not lateness");
    long w0 = T0 + 10 * S;
    long w1 = T0 + 20 * S;
    assertRow(m.get("HOST|host-m1|host-m1@" + w0), 9.0, 0.9, 150.0, 15.0, "MEASURED", 12, 5);
    assertEquals(4.0, m.get("HOST|host-m1|host-m1@" + w0).getIdlePowerWatts());
    assertRow(m.get("HOST|host-m1|host-m1@" + w1), 12.0, 1.2, 200.0, 20.0, "MEASURED", 14, 5);
    assertEquals(2.0, m.get("HOST|host-m1|host-m1@" + w1).getIdlePowerWatts(), "4 W over half the window");
    assertRow(m.get("GROUP|host-m1|" + C1 + "@" + w0), 6.0, 0.6, 60.0, 6.0, "MEASURED", 4, 2);
    assertEquals("pod-x", m.get("GROUP|host-m1|" + C1 + "@" + w0).getPodUid());
    assertRow(m.get("POD|host-m1|pod-x@" + w0), 6.0, 0.6, 60.0, 6.0, "MEASURED", 4, 2);
    for (String key : List.of("GROUP|host-m1|" + C1 + "@" + w0, "POD|host-m1|pod-x@" + w0)) {
      assertEquals("checkout-1", m.get(key).getPodName(), key);
      assertEquals("shop", m.get(key).getPodNamespace(), key);
      assertEquals(Map.of("app", "checkout"), m.get(key).getPodLabels(), key);
    }
    assertNull(m.get("GROUP|host-m1|host@" + w0).getPodName());
    assertRow(m.get("GROUP|host-m1|host@" + w0), 3.0, 0.3, 30.0, 3.0, "MEASURED", 8, 3);
    WindowMetrics p0 = m.get("PROCESS|host-m1|" + P100 + "@" + w0);
    assertRow(p0, 4.5, 0.45, 45.0, 4.5, "MEASURED", 3, 1);
    assertEquals("java", p0.getComm());
    assertEquals(C1, p0.getGroupId());
    assertEquals(T0, p0.getWindowStartNs());
    assertEquals(0, p0.getRevision());
    assertEquals(2, p0.getSamples());
    assertNull(p0.getHostCores());
    assertRow(m.get("PROCESS|host-m1|" + P100 + "@" + w1), 6.0, 0.6, 60.0, 6.0, "MEASURED", 3, 1);
    long v0 = T1 + 10 * S;
    assertRow(m.get("HOST|host-m2|host-m2@" + v0), 3.0, 0.3, 36.0, 3.6, "ESTIMATED", 2, 1);
    assertEquals(3.0, m.get("HOST|host-m2|host-m2@" + v0).getIdlePowerWatts());
    assertRow(m.get("PROCESS|host-m2|" + P200 + "@" + v0), 1.5, 0.15, 18.0, 1.8, "ESTIMATED", 2, 1);

    // The namespace topic: shop from C1's samples that name it (k = 2 in w0, k = 4 in w1); the host
    // groups and host-m2's group have no namespace.
    stack.await(() -> byNamespaceAndWindow(stack.readAll("metrics.bounded.ns")).size() >= 2, "2 namespace rows");
    Map<String, NamespaceMetrics> ns = byNamespaceAndWindow(stack.readAll("metrics.bounded.ns"));
    assertEquals(List.of("shop@" + w0, "shop@" + w1), List.copyOf(ns.keySet()));
    assertNamespace(ns.get("shop@" + w0), 0, 1, 4.0, 40.0, "MEASURED", 1, 1, 1);
    assertNamespace(ns.get("shop@" + w1), 0, 1, 8.0, 80.0, "MEASURED", 1, 1, 1);
    assertNull(ns.get("shop@" + w0).getServerTransactions(), "no TransactionStats");

    // Dead letters: the invalid and the undecodable sample, in the shared DLQ with the resources topic.
    stack.await(() -> stack.readAll("dlq.bounded").size() >= 2, "2 dead letters committed");
    List<ConsumerRecord<byte[], byte[]>> dead = new ArrayList<>(stack.readAll("dlq.bounded"));
    assertEquals(2, dead.size());
    dead.sort(Comparator.comparingLong(r -> Long.parseLong(StreamJobHarness.header(r, DeadLetterSerializer.OFFSET))));
    assertEquals("invalid: PROCESS record with tgid 0", StreamJobHarness.header(dead.get(0), DeadLetterSerializer.REASON));
    assertTrue(StreamJobHarness.header(dead.get(1), DeadLetterSerializer.REASON).startsWith("undecodable: "));
    assertEquals(res, StreamJobHarness.header(dead.get(1), DeadLetterSerializer.TOPIC));

    // The graph: the latest window on the nodes.
    assertNode("MATCH (n:Process {id: $id}) RETURN n", P100, 0.6, 6.0, 60.0, "MEASURED", 3, w1);
    assertEquals("java", node("MATCH (n:Process {id: $id}) RETURN n", P100).get("comm").asString(),
        "the connection sink's properties stay");
    Value c = assertNode("MATCH (n:Container {id: $id})-[:RUNS_ON]->(:Host {id: 'host-m1'}) RETURN n", C1,
        0.8, 8.0, 80.0, "MEASURED", 4, w1);
    assertEquals(2, c.get("processes").asInt());
    assertEquals("pod-x", c.get("podUid").asString());
    assertEquals("checkout-1", c.get("podName").asString());
    assertEquals("shop", c.get("podNamespace").asString());
    assertEquals(List.of("app=checkout"), c.get("podLabels").asList());
    Value h1 = assertNode("MATCH (n:Host {id: $id}) RETURN n", "host-m1", 1.2, 20.0, 200.0, "MEASURED", 14, w1);
    assertEquals(2.0, h1.get("idlePowerW").asDouble());
    assertEquals(5, h1.get("processes").asInt());
    assertTrue(h1.get("cores").isNull(), "unknown: ResourceSample v1 has no core count");
    assertNode("MATCH (n:Host {id: $id}) RETURN n", "host-m2", 0.3, 3.6, 36.0, "ESTIMATED", 2, v0);
    assertEquals(0, count("MATCH (n:Process {id: $id}) RETURN count(n)", P200), "no Process node is created");
    assertEquals(1, count("MATCH (n:Container) WHERE n.hostId IN ['host-m1', 'host-m2'] RETURN count(n)", null),
        "the host group has no node");
    Value shop = namespaceNode("shop", 0.8, 8.0, 80.0, "MEASURED", w1, 0);
    assertEquals(1, shop.get("pods").asInt());
    assertEquals(1, shop.get("hosts").asInt());
    assertEquals(1, count("MATCH (n:Namespace) WHERE n.id = 'shop' RETURN count(n)", null));
    // History (--history-windows, default 360): both windows, though they reached the sink together.
    assertEquals(List.of(w0, w1), h1.get("historyWindowEndNs").asList());
    assertEquals(List.of(0.9, 1.2), h1.get("historyCpuUsage").asList());
    assertEquals(List.of(15.0, 20.0), h1.get("historyPowerW").asList());
    assertEquals(List.of(0L, 0L), h1.get("historyRevision").asList());
    Value p100 = node("MATCH (n:Process {id: $id}) RETURN n", P100);
    assertEquals(List.of(w0, w1), p100.get("historyWindowEndNs").asList());
    assertEquals(List.of(0.45, 0.6), p100.get("historyCpuUsage").asList());
    assertEquals(List.of(0.6, 0.8), c.get("historyCpuUsage").asList());
    assertEquals(List.of(0.4, 0.8), shop.get("historyCpuUsage").asList());
    assertEquals(List.of(v0), node("MATCH (n:Host {id: $id}) RETURN n", "host-m2").get("historyWindowEndNs").asList());

    // An older window never overwrites a newer one (compared in the Cypher).
    List<String> before = stack.dump();
    Neo4jSettings settings = new Neo4jSettings(stack.boltUri(), null, null, 100, 100);
    // History off: this checks the latest-window properties (a revision of w0 would rightly correct w0's entry).
    try (NodeMetricsGraphWriter w = new NodeMetricsGraphWriter(settings, 0, 32)) {
      MetricsRow stale = new MetricsRow();
      stale.level = "HOST";
      stale.hostId = "host-m1";
      stale.entityId = "host-m1";
      stale.windowStartNs = T0;
      stale.windowEndNs = w0;
      stale.revision = 7;
      stale.cpuCores = 99;
      stale.powerSource = "MEASURED";
      w.write(List.of(stale));
    }
    assertEquals(before, stack.dump());

    // Replay: a new consumer group recomputes the same windows; the graph is unchanged.
    runBounded("metrics-run-2", res, "conn.bounded", "metrics.bounded", "dlq.bounded");
    assertEquals(before, stack.dump());
  }

  /**
   * Live run, hosts on two partitions: host-l2 (clock an hour behind) reports one window and goes
   * quiet; host-l1 goes on. Its partition being idle, host-l2 does not hold the watermark back, and
   * host-l1's windows close; host-l2's own window closed before, nothing was late.
   */
  @Test
  void anIdleHostDoesNotStallTheOthers() throws Exception {
    String res = "res.live";
    stack.kafka.createTopic(res, 2);
    stack.createTopics(1, "conn.live", "metrics.live", "dlq.live");
    JobConfig c = config("metrics-live", res, "conn.live", "metrics.live", "dlq.live");
    c.maxOutOfOrdernessMs = 0;
    // Processing time: at 1 s, a produce stalled on a busy machine could idle host-l2 between its samples.
    c.idlenessMs = 5000;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    long lateBefore = LateSampleCounter.DROPPED.get();
    JobClient job = env.executeAsync("metrics-it-live");
    try {
      List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
      for (int s : new int[] {5, 10, 15}) {
        records.add(new ProducerRecord<>(res, 1, "host-l2",
            encode(sample(ResourceScope.HOST, "host-l2", T1 + s * S, S, 10.0, true, 1, 1))));
      }
      for (int s : new int[] {5, 10, 15, 25}) {
        records.add(new ProducerRecord<>(res, 0, "host-l1",
            encode(sample(ResourceScope.HOST, "host-l1", T0 + s * S, 2 * S, 20.0, true, 1, 1))));
      }
      stack.produce(records);
      stack.await(() -> {
        Map<String, WindowMetrics> m = byKeyAndWindow(stack.readAll("metrics.live"));
        return m.containsKey("HOST|host-l1|host-l1@" + (T0 + 20 * S));
      }, "host-l1's second window");
      Map<String, WindowMetrics> m = byKeyAndWindow(stack.readAll("metrics.live"));
      assertRow(m.get("HOST|host-l2|host-l2@" + (T1 + 10 * S)), 2.0, 0.2, 20.0, 2.0, "MEASURED", 1, 1);
      assertRow(m.get("HOST|host-l1|host-l1@" + (T0 + 10 * S)), 4.0, 0.4, 40.0, 4.0, "MEASURED", 1, 1);
      assertRow(m.get("HOST|host-l1|host-l1@" + (T0 + 20 * S)), 2.0, 0.2, 20.0, 2.0, "MEASURED", 1, 1);
      assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore);
      stack.await(() -> count("MATCH (n:Host {id: 'host-l1'}) WHERE n.metricsWindowEndNs = " + (T0 + 20 * S)
          + " RETURN count(n)", null) == 1, "host-l1's latest window in Neo4j");
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /**
   * Live run, two hosts on ONE partition, host-s2's clock an hour behind host-s1's, both reporting a
   * sample per (event-time) second, a step every 300 ms. Watermarks per host: host-s2 holds the
   * partition's watermark back, so its samples are not late (with one watermark per partition,
   * host-s1's samples moved it an hour past host-s2's and every host-s2 sample after the first
   * second was dropped as late: verified). Once both went quiet (idleness 5 s), the watermark moves
   * on to host-s1's and its window closes too. Idleness is processing time: at 1 s, a produce that
   * stalled over a second on a loaded machine made both hosts quiet mid-stream, and host-s2's later
   * samples late (seen in CI, 2026-11-29).
   */
  @Test
  void skewedHostsSharingAPartitionAreNotLate() throws Exception {
    String res = "res.skew";
    stack.kafka.createTopic(res, 1);
    stack.createTopics(1, "conn.skew", "metrics.skew", "dlq.skew");
    JobConfig c = config("metrics-skew", res, "conn.skew", "metrics.skew", "dlq.skew");
    c.idlenessMs = 5000;
    // One source subtask: a second one, without a partition, would hold the watermark back itself.
    c.parallelism = 1;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    long lateBefore = LateSampleCounter.DROPPED.get();
    JobClient job = env.executeAsync("metrics-it-skew");
    try {
      for (int k = 1; k <= 16; k++) {
        stack.produce(List.of(
            new ProducerRecord<>(res, 0, "host-s1", encode(sample(ResourceScope.HOST, "host-s1", T0 + k * S, S / 10, 1.0,
                true, 1, 1))),
            new ProducerRecord<>(res, 0, "host-s2", encode(sample(ResourceScope.HOST, "host-s2", T1 + k * S, S / 10, 1.0,
                true, 1, 1)))));
        Thread.sleep(300);
      }
      stack.await(() -> byKeyAndWindow(stack.readAll("metrics.skew")).containsKey("HOST|host-s1|host-s1@" + (T0 + 10 * S)),
          "host-s1's first window, once both went quiet");
      Map<String, WindowMetrics> m = byKeyAndWindow(stack.readAll("metrics.skew"));
      // Samples ending at 1..10 s: 10 x 0.1 CPU s and 1 J.
      assertRow(m.get("HOST|host-s2|host-s2@" + (T1 + 10 * S)), 1.0, 0.1, 10.0, 1.0, "MEASURED", 1, 1);
      assertRow(m.get("HOST|host-s1|host-s1@" + (T0 + 10 * S)), 1.0, 0.1, 10.0, 1.0, "MEASURED", 1, 1);
      assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore, "nothing late");
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /**
   * A task failure in the middle of the stream (after a checkpoint), recovery from the checkpoint:
   * the metrics topic (read_committed) holds every window exactly once with exact values, and the
   * graph the last window. 4 hosts, 1 s HOST samples k = 1..30 (interval k: k x 10 ms CPU, k J).
   */
  @Test
  void taskFailureMidStreamLeavesEveryWindowExactlyOnce() throws Exception {
    String res = "res.recovery";
    stack.kafka.createTopic(res, 2);
    stack.createTopics(1, "conn.recovery", "metrics.recovery", "dlq.recovery");
    JobConfig c = config("metrics-recovery", res, "conn.recovery", "metrics.recovery", "dlq.recovery");
    c.maxOutOfOrdernessMs = 0;
    c.checkpointIntervalMs = 300;
    c.checkpointDir = stack.checkpointDir("metrics-recovery");
    StreamExecutionEnvironment env = StreamJobHarness.environment(true);
    StreamJobHarness.FailOnce.Progress failure = StreamJobHarness.FailOnce.arm("metrics", 4 * 15);
    CorrelationJob.build(env, c, UnaryOperator.identity(),
        s -> s.map(new StreamJobHarness.FailOnce<MetricInput>("metrics")).name("fail once"));
    long lateBefore = LateSampleCounter.DROPPED.get();
    JobClient job = env.executeAsync("metrics-it-recovery");
    try {
      stack.produce(recoverySamples(res, 1, 15));
      stack.await(failure.checkpointedFirstHalf::get, "a checkpoint after the first half");
      List<ProducerRecord<String, byte[]>> second = recoverySamples(res, 16, 30);
      second.addAll(recoverySamples(res, 45, 45)); // moves every partition's watermark past 30 s
      stack.produce(second);
      stack.await(failure.failed::get, "the injected failure");
      stack.await(() -> stack.readAll("metrics.recovery").size() >= 12, "12 windows committed");
      List<ConsumerRecord<byte[], byte[]>> records = stack.readAll("metrics.recovery");
      assertEquals(12, records.size(), "4 hosts x 3 windows, each exactly once");
      Map<String, WindowMetrics> m = byKeyAndWindow(records);
      for (int h = 1; h <= 4; h++) {
        String host = "host-r" + h;
        for (int w = 0; w < 3; w++) {
          // k = 10w+1 .. 10w+10: sum k = 100w + 55.
          long sumK = 100L * w + 55;
          assertRow(m.get("HOST|" + host + "|" + host + "@" + (T0 + (10L * w + 10) * S)),
              sumK / 100.0, sumK / 100.0 / 10, (double) sumK, sumK / 10.0, "MEASURED", h, 1);
        }
        // Kafka's windows commit with the checkpoint; the Neo4j sink writes on its own thread after it.
        stack.await(() -> count("MATCH (n:Host {id: $id}) WHERE n.metricsWindowEndNs = " + (T0 + 30 * S)
            + " RETURN count(n)", host) == 1, host + "'s last window in Neo4j");
        assertNode("MATCH (n:Host {id: $id}) RETURN n", host, 255 / 100.0 / 10, 25.5, 255.0, "MEASURED", h,
            T0 + 30 * S);
      }
      assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore);
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /**
   * Namespaces over two hosts (live job, resources on two partitions): billing has a pod on each host,
   * search one on host-n1; the host group and a container outside Kubernetes count for none. billing's
   * processes serve transactions in w1 (one on each host: the histograms merged exactly). Once w0 is
   * committed, a late sample of a third billing pod within the lateness revises w0 (revision 1); the
   * Namespace node keeps w1, the newer window.
   */
  @Test
  void namespacesOverHostsToTheirTopicAndTheGraph() throws Exception {
    String res = "res.ns";
    stack.kafka.createTopic(res, 2);
    // Both sources' topics with two partitions, each with records: every reader has a split.
    stack.kafka.createTopic("tx.ns", 2);
    stack.createTopics(1, "conn.ns", "metrics.ns", "metrics.ns.ns", "dlq.ns");
    JobConfig c = config("metrics-ns", res, "conn.ns", "metrics.ns", "dlq.ns");
    c.transactionsTopic = "tx.ns";
    c.edgeMetricsTopic = "edges.ns";
    c.maxOutOfOrdernessMs = 0;
    c.idlenessMs = 3_600_000; // every partition has records: none may turn idle and make the others late
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    long lateBefore = LateSampleCounter.DROPPED.get();
    JobClient job = env.executeAsync("metrics-it-namespaces");
    try {
      List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
      // host-n1 (partition 0, MEASURED): billing pod-b1 (container B1), search pod-s1 (S1), the host group.
      records.add(record(res, 0, container("host-n1", T0 + 5 * S, "B1", "pod-b1", "billing", S, 10.0, true)));
      records.add(record(res, 0, container("host-n1", T0 + 10 * S, "B1", "pod-b1", "billing", 2 * S, 20.0, true)));
      records.add(record(res, 0, container("host-n1", T0 + 15 * S, "B1", "pod-b1", "billing", 3 * S, 30.0, true)));
      records.add(record(res, 0, container("host-n1", T0 + 5 * S, "S1", "pod-s1", "search", S / 2, 5.0, true)));
      records.add(record(res, 0, sample(ResourceScope.GROUP, "host-n1", T0 + 5 * S, 4 * S, 40.0, true, 3, 2)));
      // host-n2 (partition 1, ESTIMATED): billing pod-b2 (B2), a container outside Kubernetes (N2).
      records.add(record(res, 1, container("host-n2", T0 + 10 * S, "B2", "pod-b2", "billing", S, 6.0, false)));
      records.add(record(res, 1, container("host-n2", T0 + 15 * S, "B2", "pod-b2", "billing", 2 * S, 12.0, false)));
      records.add(record(res, 1, container("host-n2", T0 + 10 * S, "N2", null, null, 5 * S, 50.0, false)));
      // billing's server processes (their PROCESS samples tell the job their pod and namespace).
      for (long end : new long[] {T0 + 10 * S, T0 + 15 * S}) {
        records.add(record(res, 0, process(container("host-n1", end, "B1", "pod-b1", "billing", S / 2, 1.0, true),
            300, 7000)));
        records.add(record(res, 1, process(container("host-n2", end, "B2", "pod-b2", "billing", S / 2, 1.0, false),
            400, 8000)));
      }
      // HOST samples at 25 s on both partitions: the watermark passes w1's end.
      records.add(record(res, 0, sample(ResourceScope.HOST, "host-n1", T0 + 25 * S, S, 1.0, true, 1, 1)));
      records.add(record(res, 1, sample(ResourceScope.HOST, "host-n2", T0 + 25 * S, S, 1.0, false, 1, 1)));
      // w1 transactions served: 30 x 100 us on host-n1, 10 x 4 ms on host-n2; each partition's
      // watermark passes w1 with a record at 25 s of a process the job does not know.
      List<ProducerRecord<String, byte[]>> tx = List.of(
          txRecord(0, TransactionMetricsIT.stats(TransactionRole.SERVER, "host-n1", "10.1.0.1", 8080, "10.9.0.1",
              40000, 300, 7000, T0 + 14 * S, 30, 3000, 30_000, new long[] {100 * US}, new long[] {30})),
          txRecord(1, TransactionMetricsIT.stats(TransactionRole.SERVER, "host-n2", "10.1.0.2", 8080, "10.9.0.1",
              40001, 400, 8000, T0 + 14 * S, 10, 1000, 10_000, new long[] {4000 * US}, new long[] {10})),
          txRecord(0, TransactionMetricsIT.stats(TransactionRole.CLIENT, "host-n1", "10.1.0.1", 50000, "10.9.0.9",
              80, 999, 1, T0 + 25 * S, 1, 1, 1, new long[] {US}, new long[] {1})),
          txRecord(1, TransactionMetricsIT.stats(TransactionRole.CLIENT, "host-n2", "10.1.0.2", 50000, "10.9.0.9",
              80, 998, 1, T0 + 25 * S, 1, 1, 1, new long[] {US}, new long[] {1})));
      stack.produce(records);
      stack.produce(tx);

      long w0 = T0 + 10 * S;
      long w1 = T0 + 20 * S;
      stack.await(() -> byNamespaceAndWindow(stack.readAll("metrics.ns.ns")).size() >= 3, "3 namespace windows");
      Map<String, NamespaceMetrics> m = byNamespaceAndWindow(stack.readAll("metrics.ns.ns"));
      assertEquals(List.of("billing@" + w0, "billing@" + w1, "search@" + w0), List.copyOf(m.keySet()));
      // billing w0: 1 + 2 (B1) + 1 (B2) CPU s, 10 + 20 + 6 J; MEASURED and ESTIMATED hosts: MIXED.
      assertNamespace(m.get("billing@" + w0), 0, 3, 4.0, 36.0, "MIXED", 2, 2, 2);
      assertNull(m.get("billing@" + w0).getServerTransactions());
      assertNamespace(m.get("search@" + w0), 0, 1, 0.5, 5.0, "MEASURED", 1, 1, 1);
      // billing w1: 3 + 2 CPU s, 30 + 12 J; 40 transactions served (4/s), request bytes 3000 + 1000.
      NamespaceMetrics b1 = m.get("billing@" + w1);
      assertNamespace(b1, 0, 2, 5.0, 42.0, "MIXED", 2, 2, 2);
      assertEquals(40L, b1.getServerTransactions());
      assertEquals(0L, b1.getClientTransactions());
      assertEquals(4.0, b1.getServerRequestRate());
      assertEquals(4000L, b1.getServerRequestBytes());
      assertEquals(40_000L, b1.getServerResponseBytes());
      int b100us = TransactionMetricsIT.bucket(100 * US);
      int b4ms = TransactionMetricsIT.bucket(4000 * US);
      assertEquals(List.of(b100us, b4ms), b1.getServerTimeBuckets());
      assertEquals(List.of(30L, 10L), b1.getServerTimeCounts());
      // Nearest rank of 40: p50 (rank 20), p75 (30) in 100 us; p90 (36), p99 (40) in 4 ms.
      TransactionMetricsIT.within(100 * US, b1.getServerTimeP50Ns());
      TransactionMetricsIT.within(100 * US, b1.getServerTimeP75Ns());
      TransactionMetricsIT.within(4000 * US, b1.getServerTimeP90Ns());
      TransactionMetricsIT.within(4000 * US, b1.getServerTimeP99Ns());
      assertNull(b1.getClientRttP50Ns());

      // Late within the lateness (w0 fired, its end + 30 s not reached): billing pod-b3 on host-n2.
      stack.produce(List.of(record(res, 1,
          container("host-n2", T0 + 8 * S, "B3", "pod-b3", "billing", S, 4.0, false))));
      stack.await(() -> byNamespaceAndWindow(stack.readAll("metrics.ns.ns")).get("billing@" + w0).getRevision() == 1,
          "billing w0 revision 1");
      Map<String, NamespaceMetrics> r = byNamespaceAndWindow(stack.readAll("metrics.ns.ns"));
      assertNamespace(r.get("billing@" + w0), 1, 4, 5.0, 40.0, "MIXED", 2, 3, 3);
      assertEquals(0, r.get("search@" + w0).getRevision());
      assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore);

      // The graph: billing has w1 (the late w0 revision is older: refused), search w0; none else.
      Value billing = namespaceNode("billing", 0.5, 4.2, 42.0, "MIXED", w1, 0);
      assertEquals(4.0, billing.get("requestRate").asDouble());
      assertEquals(b1.getServerTimeP99Ns(), billing.get("serverTimeP99Ns").asLong());
      assertEquals(2, billing.get("hosts").asInt());
      assertEquals(2, billing.get("pods").asInt());
      assertEquals(2, billing.get("containers").asInt());
      assertTrue(billing.get("threads").isNull(), "no thread count across hosts");
      assertTrue(billing.get("utilization").isNull());
      Value search = namespaceNode("search", 0.05, 0.5, 5.0, "MEASURED", w0, 0);
      assertTrue(search.get("requestRate").isNull());
      assertEquals(List.of("billing", "search"), stack.list("MATCH (n:Namespace) WHERE n.id IN ['billing', "
          + "'search', 'host', ''] RETURN n.id AS id ORDER BY id", Map.of()).stream()
          .map(rec -> rec.get("id").asString()).toList());
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /** A GROUP record of container group on host; pod podUid in namespace ns (none when null). */
  static ResourceSample container(String host, long endNs, String group, String podUid, String ns, long cpuNs,
      double energyJ, boolean measured) {
    ResourceSample s = sample(ResourceScope.GROUP, host, endNs, cpuNs, energyJ, measured, 2, 1);
    s.setGroupId(group);
    s.setRuntime(ContainerRuntime.CONTAINERD);
    s.setPodUid(podUid);
    if (ns != null) {
      s.setPodName(podUid + "-name");
      s.setPodNamespace(ns);
    }
    return s;
  }

  /** The container record g as a PROCESS record of process tgid/start in it. */
  static ResourceSample process(ResourceSample g, int tgid, long start) {
    g.setScope(ResourceScope.PROCESS);
    g.setTgid(tgid);
    g.setProcessStartTimeNs(start);
    g.setComm("server");
    return g;
  }

  static ProducerRecord<String, byte[]> record(String topic, int partition, ResourceSample s) throws Exception {
    return new ProducerRecord<>(topic, partition, s.getHostId(), encode(s));
  }

  static ProducerRecord<String, byte[]> txRecord(int partition, TransactionStats s) throws Exception {
    return new ProducerRecord<>("tx.ns", partition, s.getHostId(),
        StreamJobHarness.bytes(TransactionStats.getEncoder().encode(s)));
  }

  static void assertNamespace(NamespaceMetrics n, int revision, int samples, double cpuSeconds, double energyJ,
      String source, int hosts, int pods, int containers) {
    assertTrue(n != null, "missing namespace row");
    String what = n.toString();
    assertEquals(revision, n.getRevision(), what);
    assertEquals(samples, n.getSamples(), what);
    assertEquals(cpuSeconds, n.getCpuSeconds(), 1e-12, what);
    assertEquals(cpuSeconds / 10, n.getCpuCores(), 1e-12, what);
    assertEquals(energyJ, n.getEnergyJoules(), 1e-12, what);
    assertEquals(energyJ / 10, n.getPowerWatts(), 1e-12, what);
    assertEquals(source, n.getPowerSource().name(), what);
    assertEquals(hosts, n.getHosts(), what);
    assertEquals(pods, n.getPods(), what);
    assertEquals(containers, n.getContainers(), what);
    assertEquals(n.getWindowStartNs() + 10 * S, n.getWindowEndNs(), what);
  }

  static Value namespaceNode(String name, double cpuUsage, double powerW, double energyJ, String source,
      long windowEndNs, int revision) throws InterruptedException {
    // The graph follows the Kafka outputs: their checkpoint does not wait for Neo4j.
    stack.await(() -> stack.count("MATCH (n:Namespace {id: $id}) WHERE n.metricsWindowEndNs = $w RETURN count(n)",
        Map.of("id", name, "w", windowEndNs)) == 1, "namespace " + name + " with window " + windowEndNs + " in the graph");
    Value n = node("MATCH (n:Namespace {id: $id}) RETURN n", name);
    String what = n.asMap().toString();
    assertEquals(name, n.get("name").asString(), what);
    assertEquals(cpuUsage, n.get("cpuUsage").asDouble(), 1e-12, what);
    assertEquals(powerW, n.get("powerW").asDouble(), 1e-12, what);
    assertEquals(energyJ, n.get("energyJ").asDouble(), 1e-12, what);
    assertEquals(source, n.get("powerSource").asString(), what);
    assertEquals(windowEndNs, n.get("metricsWindowEndNs").asLong(), what);
    assertEquals(revision, n.get("metricsRevision").asInt(), what);
    return n;
  }

  /** The latest revision of each namespace window, keyed "namespace@windowEndNs"; checks key and timestamp. */
  static Map<String, NamespaceMetrics> byNamespaceAndWindow(List<ConsumerRecord<byte[], byte[]>> records) {
    Map<String, NamespaceMetrics> m = new TreeMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      NamespaceMetrics n;
      try {
        n = WattgraphSchemas.namespaceMetricsDecoder().decode(r.value());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
      assertEquals(n.getNamespace(), new String(r.key(), StandardCharsets.UTF_8));
      assertEquals(n.getWindowEndNs() / 1_000_000L, r.timestamp());
      m.merge(n.getNamespace() + "@" + n.getWindowEndNs(), n, (a, b) -> b.getRevision() >= a.getRevision() ? b : a);
    }
    return m;
  }

  static List<ProducerRecord<String, byte[]>> recoverySamples(String topic, int fromK, int toK) throws Exception {
    List<ProducerRecord<String, byte[]>> out = new ArrayList<>();
    for (int k = fromK; k <= toK; k++) {
      for (int h = 1; h <= 4; h++) {
        ResourceSample s = sample(ResourceScope.HOST, "host-r" + h, T0 + k * S, k * 10_000_000L, k, true, h, 1);
        s.setIntervalStartNs(s.getIntervalEndNs() - S);
        out.add(new ProducerRecord<>(topic, h % 2, "host-r" + h, encode(s)));
      }
    }
    return out;
  }

  public static ResourceSample sample(ResourceScope scope, String host, long endNs, long cpuNs, double energyJ,
      boolean measured, int threads, int processes) {
    return ResourceSample.newBuilder()
        .setScope(scope)
        .setHostId(host)
        .setIntervalStartNs(endNs - 5 * S)
        .setIntervalEndNs(endNs)
        .setTgid(0)
        .setProcessStartTimeNs(0)
        .setComm("")
        .setCgroupId(0)
        .setGroupId("host")
        .setRuntime(ContainerRuntime.HOST)
        .setThreads(threads)
        .setProcesses(processes)
        .setCpuTimeNs(cpuNs)
        .setWeightKind(AttributionWeight.CPU_TIME)
        .setWeight(cpuNs)
        .setPowerSource(measured ? PowerSource.MEASURED : PowerSource.ESTIMATED)
        .setPowerWatts(energyJ / 5)
        .setEnergyJoules(energyJ)
        .setIdlePowerWatts(0)
        .setUnattributedPowerWatts(0)
        .build();
  }

  static void assertRow(WindowMetrics w, double cpuSeconds, double cores, double energyJ, double powerW,
      String source, int threads, int processes) {
    assertTrue(w != null, "missing window row");
    String what = w.toString();
    assertEquals(cpuSeconds, w.getCpuSeconds(), what);
    assertEquals(cores, w.getCpuCores(), what);
    assertEquals(energyJ, w.getEnergyJoules(), what);
    assertEquals(powerW, w.getPowerWatts(), what);
    assertEquals(source, w.getPowerSource().name(), what);
    assertEquals(threads, w.getThreads(), what);
    assertEquals(processes, w.getProcesses(), what);
    assertEquals(0, w.getRevision(), what);
    assertEquals(w.getWindowStartNs() + 10 * S, w.getWindowEndNs(), what);
  }

  static Value assertNode(String cypher, String id, double cpuUsage, double powerW, double energyJ, String source,
      int threads, long windowEndNs) {
    Value n = node(cypher, id);
    String what = n.asMap().toString();
    assertEquals(cpuUsage, n.get("cpuUsage").asDouble(), what);
    assertEquals(powerW, n.get("powerW").asDouble(), what);
    assertEquals(energyJ, n.get("energyJ").asDouble(), what);
    assertEquals(source, n.get("powerSource").asString(), what);
    assertEquals(threads, n.get("threads").asInt(), what);
    assertEquals(windowEndNs, n.get("metricsWindowEndNs").asLong(), what);
    assertEquals(windowEndNs - 10 * S, n.get("metricsWindowStartNs").asLong(), what);
    assertEquals(0, n.get("metricsRevision").asInt(), what);
    return n;
  }

  static JobConfig config(String group, String res, String conn, String metrics, String dlq) {
    JobConfig c = stack.config(group);
    c.topic = conn;
    c.resourcesTopic = res;
    c.metricsTopic = metrics;
    c.namespaceMetricsTopic = metrics + ".ns";
    c.dlqTopic = dlq;
    c.parallelism = 2;
    c.checkpointIntervalMs = 500;
    return c;
  }

  static void runBounded(String group, String res, String conn, String metrics, String dlq) throws Exception {
    JobConfig c = config(group, res, conn, metrics, dlq);
    c.bounded = true;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    StreamJobHarness.runToEnd(env, "metrics-it-" + group);
  }

  static byte[] encode(ResourceSample s) throws Exception {
    return StreamJobHarness.bytes(ResourceSample.getEncoder().encode(s));
  }

  /** The latest revision of each window, keyed "Kafka key@windowEndNs"; checks key and timestamp. */
  static Map<String, WindowMetrics> byKeyAndWindow(List<ConsumerRecord<byte[], byte[]>> records) {
    Map<String, WindowMetrics> m = new TreeMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      WindowMetrics w;
      try {
        w = WattgraphSchemas.windowMetricsDecoder().decode(r.value());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
      String key = new String(r.key(), StandardCharsets.UTF_8);
      assertEquals(w.getLevel() + "|" + w.getHostId() + "|" + w.getEntityId(), key);
      assertEquals(w.getWindowEndNs() / 1_000_000L, r.timestamp());
      m.merge(key + "@" + w.getWindowEndNs(), w, (a, b) -> b.getRevision() >= a.getRevision() ? b : a);
    }
    return m;
  }

  static Value node(String cypher, String id) {
    return stack.single(cypher, Map.of("id", id)).get(0);
  }

  static long count(String cypher, String id) {
    Map<String, Object> params = new TreeMap<>();
    params.put("id", id);
    return stack.count(cypher, params);
  }
}
