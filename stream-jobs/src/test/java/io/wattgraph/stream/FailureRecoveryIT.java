package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionRole;
import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import io.wattgraph.schema.WindowMetrics;
import io.wattgraph.stream.sink.neo4j.Neo4jSinkWriter;
import io.wattgraph.stream.source.Observation;
import io.wattgraph.stream.window.LateSampleCounter;
import io.wattgraph.stream.window.MetricInput;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.Value;

/**
 * Failure and replay guarantees with a real Kafka and a real Neo4j in a MiniCluster: a task
 * failure in the middle of the stream (recovery from the last checkpoint), and a Neo4j outage
 * (the sink blocks and retries). Either way the graph's totals afterwards equal the input exactly.
 */
class FailureRecoveryIT {
  static StreamJobHarness stack;

  @BeforeAll
  static void startStack() throws Exception {
    stack = StreamJobHarness.start("recovery");
  }

  @AfterAll
  static void stopStack() {
    if (stack != null) {
      stack.close();
    }
  }

  /** Counts the records that reached correlation (the job consumed them). */
  static final class Count implements MapFunction<Observation, Observation> {
    private static final long serialVersionUID = 1L;
    static final AtomicLong SEEN = new AtomicLong();

    @Override
    public Observation map(Observation o) {
      SEEN.incrementAndGet();
      return o;
    }
  }

  @Test
  void taskFailureMidStreamRecoversFromCheckpointWithExactTotals() throws Exception {
    String topic = "recovery.failure";
    stack.kafka.createTopic(topic, 2);
    Expected expected = new Expected();
    List<ConnectionEvent> first = generate("fail", 0, 200, expected);
    List<ConnectionEvent> second = generate("fail", 200, 200, expected);
    StreamJobHarness.FailOnce.Progress failure = StreamJobHarness.FailOnce.arm("connections", first.size());
    JobClient job = start(topic, "recovery-failure",
        s -> s.map(new StreamJobHarness.FailOnce<Observation>("connections")).name("fail once"));
    try {
      produce(topic, first);
      stack.await(failure.checkpointedFirstHalf::get, "a checkpoint after the first half");
      produce(topic, second);
      stack.await(failure.failed::get, "the injected failure");
      stack.await(() -> edges("fail").equals(expected.edges), () -> "exact totals after recovery: expected "
          + expected.edges + "\nbut graph has " + edges("fail"));
      assertEquals(0, externals(), "no External node: every connection found its peer");
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  @Test
  void neo4jOutageBlocksTheSinkWhichRetriesUntilTotalsAreExact() throws Exception {
    String topic = "recovery.outage";
    stack.kafka.createTopic(topic, 2);
    Expected expected = new Expected();
    List<ConnectionEvent> before = generate("outage", 0, 100, expected);
    Map<String, List<Long>> beforeEdges = new TreeMap<>(expected.edges);
    List<ConnectionEvent> during = generate("outage", 100, 100, expected);
    // The window metrics go through a sink of their own (same writer): host-o's HOST samples, window
    // W0 = [T, T+10 s) before the outage (2 x 1 CPU s: 0.2 cores), W1 = [T+10 s, T+20 s) during it
    // (2 x 2 CPU s: 0.4 cores), and one at T+26 s that closes W1.
    String res = topic + ".res";
    stack.kafka.createTopic(res, 1);
    long t = ResourceMetricsIT.T0;
    long s1 = ResourceMetricsIT.S;
    JobClient job = start(topic, "recovery-outage", s -> s.map(new Count()).name("count"));
    try {
      produce(topic, before);
      stack.produce(List.of(hostSample(res, t + 5 * s1, s1), hostSample(res, t + 10 * s1, s1),
          hostSample(res, t + 16 * s1, 0)));
      stack.await(() -> edges("outage").equals(beforeEdges), () -> "first half in the graph: " + edges("outage"));
      stack.await(() -> stack.single("MATCH (h:Host {id: 'host-o'}) RETURN coalesce(max(h.metricsWindowEndNs), 0)",
          Map.of()).get(0).asLong() == t + 10 * s1, "W0 of host-o in the graph");

      long retriesBefore = Neo4jSinkWriter.UNAVAILABLE_RETRIES.get();
      long seenBefore = Count.SEEN.get();
      int port = stack.stopNeo4j();
      produce(topic, during);
      stack.produce(List.of(hostSample(res, t + 17 * s1, 2 * s1), hostSample(res, t + 20 * s1, 2 * s1),
          hostSample(res, t + 26 * s1, 0)));
      stack.await(() -> Count.SEEN.get() >= seenBefore + during.size(), "job consumed the second half");
      stack.await(() -> Neo4jSinkWriter.UNAVAILABLE_RETRIES.get() > retriesBefore, "sink retrying");
      stack.startNeo4jAgain(port);

      stack.await(() -> edges("outage").equals(expected.edges), () -> "exact totals after the outage: expected "
          + expected.edges + "\nbut graph has " + edges("outage"));
      // W1, written once Neo4j was back, with W0 kept in the node's history.
      stack.await(() -> stack.single("MATCH (h:Host {id: 'host-o'}) RETURN coalesce(max(h.metricsWindowEndNs), 0)",
          Map.of()).get(0).asLong() == t + 20 * s1, "W1 of host-o in the graph after the outage");
      var host = stack.single("MATCH (h:Host {id: 'host-o'}) RETURN h", Map.of()).get(0);
      assertEquals(0.4, host.get("cpuUsage").asDouble(), 1e-12);
      assertEquals(List.of(t + 10 * s1, t + 20 * s1), host.get("historyWindowEndNs").asList(v -> v.asLong()));
      assertEquals(List.of(0.2, 0.4), host.get("historyCpuUsage").asList(v -> v.asDouble()));
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /**
   * A task failure in the middle of a stream of TransactionStats and ResourceSamples (client P1 on
   * host-a, server P2 on host-b, one record of each end and one sample of each process per second,
   * k = 1..30: k transactions, 10k request and 100k response bytes, k x 10 ms CPU for P2 and k x 5 ms
   * for P1), after a checkpoint covered the first 15 s and, when the timing allows, while later
   * window results sit in a Kafka transaction not committed yet; recovery from the checkpoint.
   * Afterwards the committed edge and entity windows are each there exactly once (the re-fired
   * windows replace the aborted transaction's) with exact values, and the graph has the last window.
   */
  @Test
  void taskFailureMidTransactionStreamLeavesEveryWindowExactlyOnce() throws Exception {
    // TransactionMetricsIT's record helpers write to "tx" (partition 0): this stack's topics use those names.
    stack.createTopics(1, "tx", "res", "conn.tx", "metrics", "edges", "dlq.tx");
    stack.write("MERGE (p1:Process {id: $p1}) SET p1.hostId = 'host-a' "
        + "MERGE (p2:Process {id: $p2}) SET p2.hostId = 'host-b' MERGE (p1)-[:TALKS_TO]->(p2)",
        Map.of("p1", TransactionMetricsIT.P1, "p2", TransactionMetricsIT.P2));
    JobConfig c = stack.config("recovery-transactions");
    c.topic = "conn.tx";
    c.resourcesTopic = "res";
    c.transactionsTopic = "tx";
    c.metricsTopic = "metrics";
    c.edgeMetricsTopic = "edges";
    c.dlqTopic = "dlq.tx";
    // As in TransactionMetricsIT: one subtask, one partition per topic, no idleness, so the
    // watermark moves only when both sources delivered; no disorder in this stream.
    c.parallelism = 1;
    c.maxOutOfOrdernessMs = 0;
    c.idlenessMs = 3_600_000;
    // Long, so that the failure usually comes while the second half's window results are in a
    // transaction not committed yet (the test sees them, then triggers the failure).
    c.checkpointIntervalMs = 10_000;
    c.checkpointDir = stack.checkpointDir("recovery-transactions");
    StreamExecutionEnvironment env = StreamJobHarness.environment(true);
    // Counts the ResourceSamples (two a second); the restart takes the whole job, transactions included.
    StreamJobHarness.FailOnce.Progress failure = StreamJobHarness.FailOnce.armOnTrigger("transactions", 2 * 15);
    CorrelationJob.build(env, c, UnaryOperator.identity(),
        s -> s.map(new StreamJobHarness.FailOnce<MetricInput>("transactions")).name("fail once"));
    long lateBefore = LateSampleCounter.DROPPED.get();
    JobClient job = env.executeAsync("recovery-transactions");
    try {
      stack.produce(transactionSeconds(1, 15));
      stack.await(failure.checkpointedFirstHalf::get, "a checkpoint after the first half");
      List<ProducerRecord<String, byte[]>> second = transactionSeconds(16, 30);
      second.addAll(transactionSeconds(45, 45)); // moves both sources' watermarks past 30 s
      stack.produce(second);
      // Fail while edge windows of the second half are uncommitted (or, if they were committed
      // before this poll saw them, after everything: still a failure mid-stream to recover from).
      stack.await(() -> stack.openTransaction("edges") || stack.readAll("edges").size() >= 3,
          "edge window results in Kafka");
      boolean uncommitted = stack.openTransaction("edges");
      failure.trigger.set(true);
      stack.produce(transactionSeconds(46, 46)); // the record that fails (its window [40 s, 50 s) never closes)
      stack.await(failure.failed::get, "the injected failure");
      System.out.println("recovery-transactions: failed with uncommitted edge windows: " + uncommitted);

      long t0 = ResourceMetricsIT.T0;
      long s = ResourceMetricsIT.S;
      String edge = TransactionMetricsIT.EDGE;
      // Per window 6 entity rows: the two processes, their groups ("host") and hosts.
      List<String> entities = List.of("PROCESS|host-a|" + TransactionMetricsIT.P1,
          "PROCESS|host-b|" + TransactionMetricsIT.P2, "GROUP|host-a|host", "GROUP|host-b|host",
          "HOST|host-a|host-a", "HOST|host-b|host-b");
      stack.await(() -> stack.readAll("edges").size() >= 3 && stack.readAll("metrics").size() >= 18
          && stack.count("MATCH ()-[t:TALKS_TO]->() WHERE t.latencyWindowEndNs = $w RETURN count(t)",
              Map.of("w", t0 + 30 * s)) == 1
          && stack.count("MATCH (n:Process {id: $id}) WHERE n.metricsWindowEndNs = $w RETURN count(n)",
              Map.of("id", TransactionMetricsIT.P2, "w", t0 + 30 * s)) == 1,
          () -> "3 edge windows, 18 entity windows and the last window in Neo4j\n"
              + stack.offsets("edges", "metrics"));

      List<ConsumerRecord<byte[], byte[]>> edgeRecords = stack.readAll("edges");
      List<ConsumerRecord<byte[], byte[]>> metricRecords = stack.readAll("metrics");
      assertEquals(3, edgeRecords.size(), "one edge, 3 windows, each exactly once");
      assertEquals(18, metricRecords.size(), "6 entities x 3 windows, each exactly once");
      Map<String, EdgeMetrics> edges = TransactionMetricsIT.edgesByKeyAndWindow(edgeRecords);
      Map<String, WindowMetrics> metrics = ResourceMetricsIT.byKeyAndWindow(metricRecords);
      List<String> expectedKeys = new ArrayList<>();
      for (int w = 0; w < 3; w++) {
        long end = t0 + (10L * w + 10) * s;
        entities.forEach(k -> expectedKeys.add(k + "@" + end));
      }
      assertEquals(new TreeSet<>(expectedKeys), metrics.keySet());
      for (int w = 0; w < 3; w++) {
        long end = t0 + (10L * w + 10) * s;
        long sumK = 100L * w + 55; // k = 10w+1 .. 10w+10
        EdgeMetrics e = edges.get(edge + "@" + end);
        assertTrue(e != null, "edge window ending " + end + " in " + edges.keySet());
        assertEquals(0, e.getRevision());
        assertEquals(sumK, e.getClientTransactions());
        assertEquals(sumK, e.getServerTransactions());
        assertEquals(sumK / 10.0, e.getRequestRate(), 1e-12);
        assertEquals(10 * sumK, e.getRequestBytes());
        assertEquals(100 * sumK, e.getResponseBytes());
        assertEquals(List.of(sumK), e.getClientRttCounts());
        assertEquals(List.of(sumK), e.getServerTimeCounts());
        for (String entity : entities) {
          WindowMetrics m = metrics.get(entity + "@" + end);
          assertEquals(0, m.getRevision(), entity);
          boolean server = entity.contains("host-b");
          assertEquals(server ? sumK : 0L, m.getServerTransactions(), entity);
          assertEquals(server ? 0L : sumK, m.getClientTransactions(), entity);
        }
        WindowMetrics p2 = metrics.get("PROCESS|host-b|" + TransactionMetricsIT.P2 + "@" + end);
        assertEquals(10, p2.getSamples());
        assertEquals(sumK / 100.0, p2.getCpuSeconds(), 1e-12);
        assertEquals(sumK / 10.0, p2.getServerRequestRate(), 1e-12);
        assertEquals(10 * sumK, p2.getServerRequestBytes());
        WindowMetrics p1 = metrics.get("PROCESS|host-a|" + TransactionMetricsIT.P1 + "@" + end);
        assertEquals(10, p1.getSamples());
        assertEquals(sumK / 200.0, p1.getCpuSeconds(), 1e-12);
        assertEquals(100 * sumK, p1.getClientResponseBytes());
      }
      assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore);
      // Aborted results are in the log but not read (read_uncommitted sees them): how much was replaced.
      System.out.println("recovery-transactions: edge results written " + stack.readAll("edges", "read_uncommitted").size()
          + ", committed " + edgeRecords.size());

      // The graph: the last window (k = 21..30, 255 transactions) on the edge and the processes.
      Value t = stack.single("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) RETURN t",
          Map.of("a", TransactionMetricsIT.P1, "b", TransactionMetricsIT.P2)).get(0);
      assertEquals(25.5, t.get("requestRate").asDouble(), 1e-12);
      assertEquals(2550, t.get("windowRequestBytes").asLong());
      assertEquals(0, t.get("latencyRevision").asLong());
      Value n2 = stack.single("MATCH (n:Process {id: $id}) RETURN n", Map.of("id", TransactionMetricsIT.P2)).get(0);
      assertEquals(25.5, n2.get("requestRate").asDouble(), 1e-12);
      assertEquals(0.255, n2.get("cpuUsage").asDouble(), 1e-12);
      assertEquals(0, n2.get("metricsRevision").asLong());
      Value n1 = stack.single("MATCH (n:Process {id: $id}) RETURN n", Map.of("id", TransactionMetricsIT.P1)).get(0);
      assertEquals(25.5, n1.get("clientRequestRate").asDouble(), 1e-12);
      assertEquals(t0 + 30 * s, n1.get("metricsWindowEndNs").asLong());
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /** Seconds k = from..to: both ends' TransactionStats, then both processes' 1 s ResourceSamples. */
  static List<ProducerRecord<String, byte[]>> transactionSeconds(int from, int to) throws Exception {
    List<ProducerRecord<String, byte[]>> out = new ArrayList<>();
    long ms = 1_000_000L;
    for (int k = from; k <= to; k++) {
      long end = ResourceMetricsIT.T0 + k * ResourceMetricsIT.S;
      out.add(TransactionMetricsIT.txRecord(
          TransactionMetricsIT.client(end, k, 10L * k, 100L * k, new long[] {2 * ms}, new long[] {k})));
      out.add(TransactionMetricsIT.txRecord(
          TransactionMetricsIT.server(end, k, 10L * k, 100L * k, new long[] {ms}, new long[] {k})));
    }
    for (int k = from; k <= to; k++) {
      long end = ResourceMetricsIT.T0 + k * ResourceMetricsIT.S;
      for (boolean server : new boolean[] {false, true}) {
        ResourceSample p = ResourceMetricsIT.sample(ResourceScope.PROCESS, server ? "host-b" : "host-a", end,
            k * (server ? 10 : 5) * ms, k, true, 2, 1);
        p.setIntervalStartNs(end - ResourceMetricsIT.S);
        p.setTgid(server ? 200 : 100);
        p.setProcessStartTimeNs(server ? 6000 : 5000);
        p.setComm(server ? "nginx" : "curl");
        out.add(new ProducerRecord<>("res", 0, p.getHostId(), ResourceMetricsIT.encode(p)));
      }
    }
    return out;
  }

  /** A HOST sample of host-o ending at {@code endNs} (5 s interval), to the resources topic {@code res}. */
  static ProducerRecord<String, byte[]> hostSample(String res, long endNs, long cpuNs) throws Exception {
    return new ProducerRecord<>(res, 0, "host-o", ResourceMetricsIT.encode(
        ResourceMetricsIT.sample(ResourceScope.HOST, "host-o", endNs, cpuNs, 10.0, true, 1, 1)));
  }

  JobClient start(String topic, String group,
      java.util.function.UnaryOperator<org.apache.flink.streaming.api.datastream.DataStream<Observation>> tap)
      throws Exception {
    JobConfig c = stack.config(group);
    c.topic = topic;
    c.dlqTopic = topic + ".dlq";
    c.resourcesTopic = topic + ".res";
    c.metricsTopic = topic + ".metrics";
    c.idlenessMs = 1000;
    c.parallelism = 2;
    c.checkpointIntervalMs = 300;
    c.neo4jDriverRetryMs = 500;
    c.checkpointDir = stack.checkpointDir(group);
    StreamExecutionEnvironment env = StreamJobHarness.environment(true);
    CorrelationJob.build(env, c, tap);
    return env.executeAsync("recovery-" + group);
  }

  /** Expected TALKS_TO totals per "clientId>serverId": [bytes c2s, bytes s2c, connections]. */
  static final class Expected {
    final Map<String, List<Long>> edges = new TreeMap<>();

    void add(String client, String server, long c2s, long s2c) {
      edges.merge(client + ">" + server, List.of(c2s, s2c, 1L),
          (a, b) -> List.of(a.get(0) + b.get(0), a.get(1) + b.get(1), a.get(2) + b.get(2)));
    }
  }

  /**
   * Connections {@code from..from+n-1} between 3 client hosts and 2 server hosts, each opened,
   * snapshotted and closed on both ends (both ends' events adjacent, as two agents would send them).
   */
  static List<ConnectionEvent> generate(String tag, int from, int n, Expected expected) {
    List<ConnectionEvent> out = new ArrayList<>();
    for (int i = from; i < from + n; i++) {
      int c = i % 3;
      int s = i % 2;
      String clientHost = tag + "-c" + c;
      String serverHost = tag + "-s" + s;
      String clientIp = "10.60." + c + ".1";
      String serverIp = "10.61." + s + ".1";
      int clientPort = 20000 + i;
      int tgidC = 100 + c;
      int tgidS = 200 + s;
      long c2s = 1000L + 7L * i;
      long s2c = 50_000L + 13L * i;
      long t = 1_000_000L * (i + 1);
      for (ConnectionEventKind k : ConnectionEventKind.values()) {
        long frac = k == ConnectionEventKind.OPENED ? 0 : k == ConnectionEventKind.SNAPSHOT ? 2 : 1;
        long cs = frac == 0 ? 0 : c2s / frac;
        long sc = frac == 0 ? 0 : s2c / frac;
        out.add(event(clientHost, tgidC, k, ConnectionRole.CLIENT, clientIp, clientPort, serverIp, 9000,
            t + k.ordinal(), cs, sc, 1_000_000L + i));
        out.add(event(serverHost, tgidS, k, ConnectionRole.SERVER, serverIp, 9000, clientIp, clientPort,
            t + k.ordinal(), sc, cs, 2_000_000L + i));
      }
      expected.add(clientHost + "/" + tgidC + "/" + (tgidC * 10L), serverHost + "/" + tgidS + "/" + (tgidS * 10L),
          c2s, s2c);
    }
    return out;
  }

  static ConnectionEvent event(String host, int tgid, ConnectionEventKind kind, ConnectionRole role,
      String localIp, int localPort, String remoteIp, int remotePort, long t, long sent, long received,
      long cookie) {
    ConnectionEvent e = CorrelationJobIT.event(host, tgid, "p" + tgid, "/bin/p" + tgid, null, kind, role,
        localIp, localPort, remoteIp, remotePort, t, sent, received, cookie);
    e.setProcessStartTimeNs(tgid * 10L);
    return e;
  }

  static void produce(String topic, List<ConnectionEvent> events) throws Exception {
    List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
    for (ConnectionEvent e : events) {
      records.add(new ProducerRecord<>(topic, CorrelationJobIT.kafkaKey(e), CorrelationJobIT.encode(e)));
    }
    stack.produce(records);
  }

  /** TALKS_TO totals between processes of the hosts whose id starts with tag. */
  static Map<String, List<Long>> edges(String tag) {
    try {
      Map<String, List<Long>> m = new TreeMap<>();
      stack.list("MATCH (c:Process)-[t:TALKS_TO]->(s) WHERE c.hostId STARTS WITH $tag "
                + "RETURN c.id AS c, s.id AS s, t.bytesClientToServer AS c2s, t.bytesServerToClient AS s2c, "
                + "t.connections AS n", Map.of("tag", tag + "-"))
          .forEach(r -> m.put(r.get("c").asString() + ">" + r.get("s").asString(),
              List.of(r.get("c2s").asLong(), r.get("s2c").asLong(), r.get("n").asLong())));
      return m;
    } catch (RuntimeException e) {
      return Map.of(); // Neo4j restarting
    }
  }

  static long externals() {
    return stack.count("MATCH (x:External) RETURN count(x)", Map.of());
  }
}
