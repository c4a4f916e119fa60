package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.EdgeEndKind;
import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.HttpRouteStats;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import io.wattgraph.schema.ServiceBackend;
import io.wattgraph.schema.ServiceMapping;
import io.wattgraph.schema.TransactionAddress;
import io.wattgraph.schema.TransactionHistograms;
import io.wattgraph.schema.TransactionRole;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.schema.WindowHttpRoute;
import io.wattgraph.schema.WindowMetrics;
import io.wattgraph.stream.sink.kafka.DeadLetterSerializer;
import io.wattgraph.stream.vip.TransactionVirtualIpResolver;
import io.wattgraph.stream.window.LateSampleCounter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.Value;

/**
 * Transaction metrics through the whole job against local-stack's real Kafka and Neo4j: the
 * TransactionStats of both ends of one connection (client process P1 on host-a, server process P2
 * in container C2 of pod pod-s on host-b), produced out of order, with the ResourceSamples of the
 * same processes; then one late server record that updates the window (revision 1). Every figure
 * is checked in Kafka (read_committed) and in Neo4j against values computed by hand (comments).
 * The records carry HTTP routes (TransactionStats v2), capped at 2 per entity window and role.
 * Window 10 s.
 *
 * <p>Long on purpose: one real Kafka broker and Neo4j per class (their start is most of a test's
 * time), so the cases share the class, and each checks whole windows against values computed by hand.
 */
class TransactionMetricsIT {
  static final long T0 = ResourceMetricsIT.T0;
  static final long S = ResourceMetricsIT.S;
  static final long US = 1_000L;
  static final long MS = 1_000_000L;
  static final String C2 = "c2".repeat(32);
  static final String P1 = "host-a/100/5000";
  static final String P2 = "host-b/200/6000";
  static final String EDGE = "P:" + P1 + ">P:" + P2;
  static final String USERS = "/users/{id}";
  static final String LONG_PATH = "/reports/" + "x".repeat(54);

  static StreamJobHarness stack;

  @BeforeAll
  static void startStack() throws Exception {
    stack = StreamJobHarness.start("transactions");
  }

  @AfterAll
  static void stopStack() {
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void bothEndsOutOfOrderAndALateRecordToKafkaAndTheGraph() throws Exception {
    stack.createTopics(1, "tx", "res", "conn", "metrics", "edges", "dlq");
    // The graph as the connection sink leaves it: P1 -> P2, P2 in container C2.
    write("MERGE (a:Host {id: 'host-a'}) MERGE (b:Host {id: 'host-b'}) "
        + "MERGE (p1:Process {id: $p1}) SET p1.hostId = 'host-a', p1.pid = 100, p1.comm = 'curl' "
        + "MERGE (p2:Process {id: $p2}) SET p2.hostId = 'host-b', p2.pid = 200, p2.comm = 'nginx' "
        + "MERGE (p1)-[:RUNS_ON]->(a) MERGE (p2)-[:RUNS_ON]->(b) "
        + "MERGE (c:Container {id: $c}) ON CREATE SET c.hostId = 'host-b' MERGE (p2)-[:IN_CONTAINER]->(c) "
        + "MERGE (c)-[:RUNS_ON]->(b) "
        + "MERGE (p1)-[t:TALKS_TO]->(p2) SET t.connections = 1, t.bytesClientToServer = 4000, "
        + "t.bytesServerToClient = 40000", Map.of("p1", P1, "p2", P2, "c", C2));

    JobConfig c = stack.config("tx-it");
    c.topic = "conn";
    c.resourcesTopic = "res";
    c.transactionsTopic = "tx";
    c.metricsTopic = "metrics";
    c.edgeMetricsTopic = "edges";
    c.dlqTopic = "dlq";
    // One subtask per source and one partition per topic, and no idleness within the test: the
    // watermark passes W0 only when both sources have delivered their W1 records, whatever the
    // order in which the two sources are read (with idleness, a source read later would be idle
    // meanwhile and its W0 records late).
    c.parallelism = 1;
    c.checkpointIntervalMs = 500;
    c.maxOutOfOrdernessMs = 1000;
    c.idlenessMs = 3_600_000;
    c.maxHttpRoutes = 2;
    c.allowedLatenessMs = 60_000;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    long lateBefore = LateSampleCounter.DROPPED.get();
    JobClient job = env.executeAsync("transactions-it");
    try {
      // Window W0 = [T0, T0 + 10 s). Client records (host-a, P1) and server records (host-b, P2),
      // the interval ending at 9 s before the one ending at 5 s (out of order), the server end first.
      List<ProducerRecord<String, byte[]>> tx = new ArrayList<>();
      // HTTP routes, part of each record's transactions (5 of the 30 at 5 s are not HTTP).
      tx.add(txRecord(routes(server(T0 + 9 * S, 10, 1000, 10_000, new long[] {4 * MS}, new long[] {10}),
          route("GET", USERS, false, new long[] {4 * MS}, new long[] {6}),
          route("POST", "/orders", false, new long[] {4 * MS}, new long[] {4}))));
      tx.add(txRecord(routes(server(T0 + 5 * S, 30, 3000, 30_000, new long[] {100 * US, 1500 * US}, new long[] {20, 10}),
          route("GET", USERS, false, new long[] {100 * US}, new long[] {20}),
          route("GET", "/health", false, new long[] {1500 * US}, new long[] {5}))));
      tx.add(txRecord(routes(client(T0 + 9 * S, 10, 1000, 10_000, new long[] {5 * MS}, new long[] {10}),
          route("GET", USERS, false, new long[] {5 * MS}, new long[] {10}))));
      tx.add(txRecord(routes(client(T0 + 5 * S, 30, 3000, 30_000, new long[] {300 * US, 2 * MS}, new long[] {20, 10}),
          route("GET", USERS, false, new long[] {300 * US}, new long[] {20}),
          route("GET", LONG_PATH, true, new long[] {2 * MS}, new long[] {10}))));
      // Window W1: moves the watermark past W0's end (16 s - 1 s out-of-orderness > 10 s).
      tx.add(txRecord(routes(client(T0 + 16 * S, 1, 100, 1000, new long[] {300 * US}, new long[] {1}),
          route("GET", USERS, false, new long[] {300 * US}, new long[] {1}))));
      // Dead letters: garbage and a histogram of another bucket scheme.
      tx.add(new ProducerRecord<>("tx", 0, "k", new byte[] {(byte) 0xC3, 0x01, 7}));
      TransactionStats otherScheme = server(T0 + 5 * S, 1, 1, 1, new long[] {100}, new long[] {1});
      otherScheme.setSubBucketBits(5);
      tx.add(txRecord(otherScheme));

      // ResourceSamples of both processes, their groups and hosts (5 s intervals ending at 5 s and 9 s).
      List<ProducerRecord<String, byte[]>> res = new ArrayList<>();
      for (long end : new long[] {T0 + 9 * S, T0 + 5 * S, T0 + 16 * S}) {
        ResourceSample p2 = ResourceMetricsIT.sample(ResourceScope.PROCESS, "host-b", end, S, 5.0, true, 4, 1);
        p2.setTgid(200);
        p2.setProcessStartTimeNs(6000);
        p2.setComm("nginx");
        p2.setGroupId(C2);
        p2.setPodUid("pod-s");
        ResourceSample g2 = ResourceMetricsIT.sample(ResourceScope.GROUP, "host-b", end, 3 * S / 2, 7.0, true, 6, 2);
        g2.setGroupId(C2);
        g2.setPodUid("pod-s");
        ResourceSample p1 = ResourceMetricsIT.sample(ResourceScope.PROCESS, "host-a", end, S / 2, 2.0, true, 1, 1);
        p1.setTgid(100);
        p1.setProcessStartTimeNs(5000);
        p1.setComm("curl");
        for (ResourceSample s : List.of(p2, g2, p1)) {
          res.add(new ProducerRecord<>("res", 0, s.getHostId(), ResourceMetricsIT.encode(s)));
        }
      }
      // Every valid record twice, the copies after all the originals (an agent's spool replaying
      // what Kafka had not confirmed): the same bytes, so every figure below is that of one copy.
      List<ProducerRecord<String, byte[]>> replay = new ArrayList<>(tx.subList(0, 5));
      replay.addAll(res);
      stack.produce(tx);
      stack.produce(res);
      stack.produce(replay);

      long w0 = T0 + 10 * S;
      await(() -> edges().containsKey(EDGE + "@" + w0) && metrics().containsKey("PROCESS|host-b|" + P2 + "@" + w0)
          && metrics().containsKey("HOST|host-a|host-a@" + w0), "W0 results");

      // The edge, revision 0: 40 transactions each end -> 4/s; bytes max(4000, 4000), 40000.
      // Client RTTs 20 x 300 us, 10 x 2 ms, 10 x 5 ms: p50 (rank 20) 300 us, p75 (rank 30) 2 ms,
      // p90 (rank 36) and p99 (rank 40) 5 ms; true mean 1.9 ms. Server times 20 x 100 us,
      // 10 x 1.5 ms, 10 x 4 ms: p50 100 us, p75 1.5 ms, p90 and p99 4 ms; true mean 1.425 ms.
      // Network time = 1.9 - 1.425 ms = 475 us (within the midpoint error of both means).
      EdgeMetrics e0 = edges().get(EDGE + "@" + w0);
      assertEquals(0, e0.getRevision());
      assertEquals(EdgeEndKind.PROCESS, e0.getClientKind());
      assertEquals(P1, e0.getClientId());
      assertEquals(P2, e0.getServerId());
      assertEquals(T0, e0.getWindowStartNs());
      assertEquals(40, e0.getClientTransactions());
      assertEquals(40, e0.getServerTransactions());
      assertEquals(4.0, e0.getRequestRate(), 1e-12);
      assertEquals(4000, e0.getRequestBytes());
      assertEquals(40_000, e0.getResponseBytes());
      within(300 * US, e0.getClientRttP50Ns());
      within(2 * MS, e0.getClientRttP75Ns());
      within(5 * MS, e0.getClientRttP90Ns());
      within(5 * MS, e0.getClientRttP99Ns());
      within(100 * US, e0.getServerTimeP50Ns());
      within(1500 * US, e0.getServerTimeP75Ns());
      within(4 * MS, e0.getServerTimeP90Ns());
      within(4 * MS, e0.getServerTimeP99Ns());
      near(475_000, e0.getNetworkTimeMeanNs(), (1_900_000 + 1_425_000) / 256.0);
      assertEquals(List.of(bucket(300 * US), bucket(2 * MS), bucket(5 * MS)), e0.getClientRttBuckets());
      assertEquals(List.of(20L, 10L, 10L), e0.getClientRttCounts());

      // The server process P2, revision 0: 2 CPU s (1 s per sample) -> 0.2 cores, 4 threads:
      // U = 0.05; 40 served / 10 s = 4/s; D = 0.05 / 4 = 0.0125 s; saturation 1 / D = 80/s.
      Map<String, WindowMetrics> m = metrics();
      WindowMetrics p2 = m.get("PROCESS|host-b|" + P2 + "@" + w0);
      assertEquals(0, p2.getRevision());
      assertEquals(2, p2.getSamples());
      assertEquals(0.2, p2.getCpuCores(), 1e-12);
      assertEquals(40L, p2.getServerTransactions());
      assertEquals(0L, p2.getClientTransactions());
      assertEquals(4.0, p2.getServerRequestRate(), 1e-12);
      assertEquals(4000L, p2.getServerRequestBytes());
      assertEquals(40_000L, p2.getServerResponseBytes());
      assertEquals(0.05, p2.getUtilization(), 1e-12);
      assertEquals(0.0125, p2.getServiceDemandSeconds(), 1e-12);
      assertEquals(80.0, p2.getSaturationRate(), 1e-9);
      within(100 * US, p2.getServerTimeP50Ns());
      within(4 * MS, p2.getServerTimeP99Ns());
      assertNull(p2.getClientRttP50Ns());
      // Its group and pod (the mapping from P2's PROCESS samples) and host carry the same transactions.
      // C2: 3 CPU s -> 0.3 cores over at most 6 threads: U = 0.05, D = 0.0125 s, again 80/s.
      WindowMetrics g2 = m.get("GROUP|host-b|" + C2 + "@" + w0);
      assertEquals(40L, g2.getServerTransactions());
      assertEquals(0.05, g2.getUtilization(), 1e-12);
      assertEquals(80.0, g2.getSaturationRate(), 1e-9);
      assertEquals(40L, m.get("POD|host-b|pod-s@" + w0).getServerTransactions());
      WindowMetrics hostB = m.get("HOST|host-b|host-b@" + w0);
      assertEquals(40L, hostB.getServerTransactions());
      assertEquals(0, hostB.getSamples(), "no HOST ResourceSample in this test: transactions only");
      assertNull(hostB.getUtilization());
      // The client process P1 (group "host"): 40 issued, RTT percentiles, nothing served (no D).
      WindowMetrics p1 = m.get("PROCESS|host-a|" + P1 + "@" + w0);
      assertEquals(40L, p1.getClientTransactions());
      assertEquals(0L, p1.getServerTransactions());
      assertEquals(4000L, p1.getClientRequestBytes());
      within(2 * MS, p1.getClientRttP75Ns());
      assertNull(p1.getServiceDemandSeconds());
      assertEquals(40L, m.get("GROUP|host-a|host@" + w0).getClientTransactions());

      // HTTP routes, revision 0. Served by P2: GET /users/{id} 26 (20 x 100 us, 6 x 4 ms), GET /health
      // 5 (1.5 ms), POST /orders 4 (4 ms). Cap 2: users stays, OTHER * = health + orders = 9
      // (5 x 1.5 ms, 4 x 4 ms). Users: p50 rank 13 -> 100 us, p90 rank 24 and p99 rank 26 -> 4 ms,
      // true mean (2 + 24) ms / 26 = 1 ms, 2.6/s. OTHER *: p50 rank 5 -> 1.5 ms, p90 rank 9 -> 4 ms, 0.9/s.
      // The same on P2's group, pod and host.
      for (String k : List.of("PROCESS|host-b|" + P2, "GROUP|host-b|" + C2, "POD|host-b|pod-s", "HOST|host-b|host-b")) {
        List<WindowHttpRoute> routes = m.get(k + "@" + w0).getHttpRoutes();
        assertEquals(List.of("SERVER GET " + USERS, "SERVER OTHER *"), routeKeys(routes), k);
        WindowHttpRoute users = routes.get(0);
        assertEquals(26L, users.getTransactions());
        assertEquals(2.6, users.getRequestRate(), 1e-12);
        assertEquals(List.of(bucket(100 * US), bucket(4 * MS)), users.getLatencyBuckets());
        assertEquals(List.of(20L, 6L), users.getLatencyCounts());
        within(100 * US, users.getLatencyP50Ns());
        within(4 * MS, users.getLatencyP90Ns());
        within(4 * MS, users.getLatencyP99Ns());
        near(1_000_000, users.getLatencyMeanNs(), 1_000_000 / 256.0);
        WindowHttpRoute other = routes.get(1);
        assertEquals(9L, other.getTransactions());
        assertEquals(0.9, other.getRequestRate(), 1e-12);
        assertEquals(List.of(bucket(1500 * US), bucket(4 * MS)), other.getLatencyBuckets());
        assertEquals(List.of(5L, 4L), other.getLatencyCounts());
        within(1500 * US, other.getLatencyP50Ns());
        within(4 * MS, other.getLatencyP90Ns());
      }
      // Issued by P1 (and its group and host): GET /users/{id} 30 (20 x 300 us, 10 x 5 ms): p50 rank
      // 15 -> 300 us, p90 rank 27 -> 5 ms; the truncated path 10 x 2 ms. Both under the cap.
      for (String k : List.of("PROCESS|host-a|" + P1, "GROUP|host-a|host", "HOST|host-a|host-a")) {
        List<WindowHttpRoute> routes = m.get(k + "@" + w0).getHttpRoutes();
        assertEquals(List.of("CLIENT GET " + USERS, "CLIENT GET " + LONG_PATH + "…"), routeKeys(routes), k);
        assertEquals(30L, routes.get(0).getTransactions());
        assertEquals(List.of(20L, 10L), routes.get(0).getLatencyCounts());
        within(300 * US, routes.get(0).getLatencyP50Ns());
        within(5 * MS, routes.get(0).getLatencyP90Ns());
        assertEquals(10L, routes.get(1).getTransactions());
        assertTrue(routes.get(1).getPathTruncated());
        within(2 * MS, routes.get(1).getLatencyP99Ns());
      }

      // The graph: W0 revision 0 on the nodes and the edge.
      await(() -> count("MATCH ()-[t:TALKS_TO]->() WHERE t.latencyWindowEndNs = " + w0 + " RETURN count(t)") == 1
          && count("MATCH (n:Process {id: '" + P2 + "'}) WHERE n.requestRate IS NOT NULL RETURN count(n)") == 1,
          "W0 in Neo4j");

      // One late server record of W0 (interval ending at 8 s, arriving after W0 fired, within the
      // lateness): 2 transactions of 200 us. Revision 1: server 42 -> 4.2/s. Server times 20 x 100 us,
      // 2 x 200 us, 10 x 1.5 ms, 10 x 4 ms: p50 (rank 21) 200 us, p75 (rank 32) 1.5 ms, p90 (rank 38)
      // and p99 (rank 42) 4 ms; mean (57 + 0.4) ms / 42 = 1366666.7 ns; network 1.9 ms - that = 533333 ns.
      // P2: D = 0.05 / 4.2 = 0.0119048 s, saturation 84/s.
      // Its route: POST /orders 2 x 200 us, folded into OTHER * (11: 2 x 200 us, 5 x 1.5 ms, 4 x 4 ms;
      // p50 rank 6 -> 1.5 ms, p90 rank 10 and p99 rank 11 -> 4 ms; 1.1/s); users unchanged.
      ProducerRecord<String, byte[]> late = txRecord(routes(server(T0 + 8 * S, 2, 200, 2000, new long[] {200 * US},
          new long[] {2}), route("POST", "/orders", false, new long[] {200 * US}, new long[] {2})));
      // It too is replayed, and so is a sample of W0 after W0 fired: neither changes a figure.
      stack.produce(List.of(late, late, res.get(0)));
      await(() -> edges().get(EDGE + "@" + w0).getRevision() == 1
          && metrics().get("PROCESS|host-b|" + P2 + "@" + w0).getRevision() == 1, "W0 revision 1");
      EdgeMetrics e1 = edges().get(EDGE + "@" + w0);
      assertEquals(40, e1.getClientTransactions());
      assertEquals(42, e1.getServerTransactions());
      assertEquals(4.2, e1.getRequestRate(), 1e-12);
      assertEquals(4200, e1.getRequestBytes());
      assertEquals(42_000, e1.getResponseBytes());
      within(200 * US, e1.getServerTimeP50Ns());
      within(1500 * US, e1.getServerTimeP75Ns());
      within(4 * MS, e1.getServerTimeP90Ns());
      within(4 * MS, e1.getServerTimeP99Ns());
      within(300 * US, e1.getClientRttP50Ns());
      near(1_900_000 - 57_400_000 / 42.0, e1.getNetworkTimeMeanNs(), (1_900_000 + 57_400_000 / 42.0) / 256.0);
      WindowMetrics p2r1 = metrics().get("PROCESS|host-b|" + P2 + "@" + w0);
      assertEquals(42L, p2r1.getServerTransactions());
      assertEquals(0.05 / 4.2, p2r1.getServiceDemandSeconds(), 1e-12);
      assertEquals(84.0, p2r1.getSaturationRate(), 1e-9);
      List<WindowHttpRoute> routes1 = p2r1.getHttpRoutes();
      assertEquals(List.of("SERVER GET " + USERS, "SERVER OTHER *"), routeKeys(routes1));
      assertEquals(26L, routes1.get(0).getTransactions());
      assertEquals(11L, routes1.get(1).getTransactions());
      assertEquals(1.1, routes1.get(1).getRequestRate(), 1e-12);
      assertEquals(List.of(bucket(200 * US), bucket(1500 * US), bucket(4 * MS)), routes1.get(1).getLatencyBuckets());
      assertEquals(List.of(2L, 5L, 4L), routes1.get(1).getLatencyCounts());
      within(1500 * US, routes1.get(1).getLatencyP50Ns());
      within(4 * MS, routes1.get(1).getLatencyP90Ns());
      within(4 * MS, routes1.get(1).getLatencyP99Ns());
      assertEquals(routes1, metrics().get("HOST|host-b|host-b@" + w0).getHttpRoutes(), "the host's revision 1 too");
      assertEquals(2, p2r1.getSamples(), "the late transaction record is not a sample");
      assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore, "nothing beyond the lateness");

      // Neo4j: revision 1 on the edge and on P2, its container and host, with the same figures.
      await(() -> count("MATCH ()-[t:TALKS_TO]->() WHERE t.latencyRevision = 1 RETURN count(t)") == 1
          && count("MATCH (n:Process {id: '" + P2 + "'}) WHERE n.metricsRevision = 1 RETURN count(n)") == 1
          && count("MATCH (n:Container {id: '" + C2 + "'}) WHERE n.metricsRevision = 1 RETURN count(n)") == 1
          && count("MATCH (n:Host {id: 'host-b'}) WHERE n.metricsRevision = 1 RETURN count(n)") == 1,
          "W0 revision 1 in Neo4j");
      Value t = single("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) RETURN t", Map.of("a", P1, "b", P2));
      assertEquals(4.2, t.get("requestRate").asDouble(), 1e-12);
      assertEquals(4200, t.get("windowRequestBytes").asLong());
      assertEquals(e1.getServerTimeP50Ns(), t.get("serverTimeP50Ns").asLong());
      assertEquals(e1.getClientRttP99Ns(), t.get("clientRttP99Ns").asLong());
      assertEquals(e1.getNetworkTimeMeanNs(), t.get("networkTimeMeanNs").asDouble(), 1e-6);
      assertEquals(w0, t.get("latencyWindowEndNs").asLong());
      assertEquals(4000, t.get("bytesClientToServer").asLong(), "the connection sink's totals stay");
      Value n2 = single("MATCH (n:Process {id: $id}) RETURN n", Map.of("id", P2));
      assertEquals(4.2, n2.get("requestRate").asDouble(), 1e-12);
      assertEquals(0.05, n2.get("utilization").asDouble(), 1e-12);
      assertEquals(84.0, n2.get("saturationRate").asDouble(), 1e-9);
      assertEquals(0.2, n2.get("cpuUsage").asDouble(), 1e-12);
      assertEquals(p2r1.getServerTimeP90Ns(), n2.get("serverTimeP90Ns").asLong());
      Value cont = single("MATCH (n:Container {id: $id}) RETURN n", Map.of("id", C2));
      assertEquals(4.2, cont.get("requestRate").asDouble(), 1e-12);
      Value n1 = single("MATCH (n:Process {id: $id}) RETURN n", Map.of("id", P1));
      assertEquals(4.0, n1.get("clientRequestRate").asDouble(), 1e-12);
      assertEquals(p1.getClientRttP50Ns(), n1.get("clientRttP50Ns").asLong());
      assertTrue(n1.get("serviceDemandS").isNull());

      // The histograms summed over windows for the export, in octave buckets: revision 1 replaced
      // revision 0's share (not added to it), and the replayed records added nothing. Server times
      // 20 x 100 us (2^16..2^17 ns: bucket 5), 2 x 200 us (6), 10 x 1.5 ms (9), 10 x 4 ms (10); client
      // RTTs 20 x 300 us (7), 10 x 2 ms (9), 10 x 5 ms (11). Sums: 57.4 ms and 76 ms, within the midpoints.
      long[] serverOctaves = octaves(Map.of(100 * US, 20L, 200 * US, 2L, 1500 * US, 10L, 4 * MS, 10L));
      long[] clientOctaves = octaves(Map.of(300 * US, 20L, 2 * MS, 10L, 5 * MS, 10L));
      for (Value v : List.of(t, n2, cont)) {
        assertEquals(Arrays.stream(serverOctaves).boxed().toList(), v.get("serverTimeOctaveTotals").asList(Value::asLong));
        near(57_400_000, v.get("serverTimeSumNsTotal").asDouble(), 57_400_000 / 256.0);
        assertEquals(v.get("serverTimeOctaves"), v.get("serverTimeOctaveTotals"), "one window so far");
      }
      for (Value v : List.of(t, n1)) {
        assertEquals(Arrays.stream(clientOctaves).boxed().toList(), v.get("clientRttOctaveTotals").asList(Value::asLong));
        near(76_000_000, v.get("clientRttSumNsTotal").asDouble(), 76_000_000 / 256.0);
      }
      assertTrue(n1.get("serverTimeOctaveTotals").isNull(), "P1 served nothing");

      // The routes on the nodes, as parallel lists (P2 and its container: revision 1; P1: revision 0).
      for (Value n : List.of(n2, cont)) {
        assertEquals(List.of("SERVER GET " + USERS, "SERVER OTHER *"), n.get("httpRouteKeys").asList(Value::asString));
        assertEquals(List.of(26L, 11L), n.get("httpRouteTransactions").asList(Value::asLong));
        List<Double> rates = n.get("httpRouteRates").asList(Value::asDouble);
        assertEquals(2.6, rates.get(0), 1e-12);
        assertEquals(1.1, rates.get(1), 1e-12);
        assertEquals(routes1.stream().map(WindowHttpRoute::getLatencyP50Ns).toList(), n.get("httpRouteP50Ns").asList(Value::asLong));
        assertEquals(routes1.stream().map(WindowHttpRoute::getLatencyP90Ns).toList(), n.get("httpRouteP90Ns").asList(Value::asLong));
        assertEquals(routes1.stream().map(WindowHttpRoute::getLatencyP99Ns).toList(), n.get("httpRouteP99Ns").asList(Value::asLong));
        assertEquals(routes1.get(0).getLatencyMeanNs(), n.get("httpRouteMeanNs").asList(Value::asDouble).get(0), 1e-6);
      }
      List<WindowHttpRoute> p1Routes = p1.getHttpRoutes();
      assertEquals(List.of("CLIENT GET " + USERS, "CLIENT GET " + LONG_PATH + "…"), n1.get("httpRouteKeys").asList(Value::asString));
      assertEquals(List.of(3.0, 1.0), n1.get("httpRouteRates").asList(Value::asDouble));
      assertEquals(p1Routes.stream().map(WindowHttpRoute::getLatencyP90Ns).toList(), n1.get("httpRouteP90Ns").asList(Value::asLong));
      Value hostNode = single("MATCH (n:Host {id: 'host-b'}) RETURN n", Map.of());
      assertEquals(List.of("SERVER GET " + USERS, "SERVER OTHER *"), hostNode.get("httpRouteKeys").asList(Value::asString));
      assertEquals(List.of(26L, 11L), hostNode.get("httpRouteTransactions").asList(Value::asLong));

      // Dead letters: the garbage and the other bucket scheme, with the transactions topic.
      await(() -> stack.readAll("dlq").size() >= 2, "2 dead letters");
      List<ConsumerRecord<byte[], byte[]>> dead = new ArrayList<>(stack.readAll("dlq"));
      assertEquals(2, dead.size());
      dead.sort(Comparator.comparingLong(r -> Long.parseLong(StreamJobHarness.header(r, DeadLetterSerializer.OFFSET))));
      assertTrue(StreamJobHarness.header(dead.get(0), DeadLetterSerializer.REASON).startsWith("undecodable: "));
      assertEquals("invalid: subBucketBits 5 (only 7 can be merged)", StreamJobHarness.header(dead.get(1), DeadLetterSerializer.REASON));
      assertEquals("tx", StreamJobHarness.header(dead.get(1), DeadLetterSerializer.TOPIC));
      // The late duplicates emitted nothing: no W0 result went past revision 1 (0 for P1's side).
      assertEquals(1, edges().get(EDGE + "@" + w0).getRevision());
      assertEquals(1, metrics().get("PROCESS|host-b|" + P2 + "@" + w0).getRevision());
      assertEquals(0, metrics().get("PROCESS|host-a|" + P1 + "@" + w0).getRevision());
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /**
   * Transactions through Kubernetes Service VIPs: the client's records name the VIP,
   * the backend's the client's real endpoint. VIP 10.96.1.10:80 has two backends (10.0.1.2:8080, the
   * watched process PB, and 10.0.1.3:8080, unwatched): the client PA's records arrive first and wait
   * for PB's server records of the same client endpoint, which tell the backend. VIP 10.96.1.11:80 has
   * one backend (PB): PC's records with client port 0 (short connections merged by the agent) are
   * rewritten at once and pair with PB's merged server records. Each VIP connection must give exactly
   * one edge, client process -> backend process, with both ends' exact sums, on the edge-metrics topic
   * and on the connection graph's TALKS_TO edge; no External edge.
   */
  @Test
  void transactionsThroughServiceVipsCountForTheEdgeClientToBackend() throws Exception {
    stack.createTopics(1, "vip-tx", "vip-res", "vip-conn", "vip-metrics", "vip-edges", "vip-dlq", "vip-maps");
    String pa = "host-v/110/5100";
    String pb = "host-w/210/6100";
    String pc = "host-x/310/7100";
    // Windows of their own (the Neo4j of this class is shared with the test above, which counts edges by window).
    long t0 = T0 + 1000 * S;
    // The connection graph, as the connection path (which resolves the VIPs) leaves it.
    write("MERGE (a:Process {id: $a}) MERGE (b:Process {id: $b}) MERGE (c:Process {id: $c}) "
        + "MERGE (a)-[:TALKS_TO]->(b) MERGE (c)-[:TALKS_TO]->(b)", Map.of("a", pa, "b", pb, "c", pc));

    JobConfig c = stack.config("vip-it");
    c.topic = "vip-conn";
    c.resourcesTopic = "vip-res";
    c.transactionsTopic = "vip-tx";
    c.metricsTopic = "vip-metrics";
    c.edgeMetricsTopic = "vip-edges";
    c.dlqTopic = "vip-dlq";
    c.serviceMappingsTopic = "vip-maps";
    c.parallelism = 1; // one partition per topic, no idleness: as in the test above
    c.checkpointIntervalMs = 500;
    c.maxOutOfOrdernessMs = 1000;
    c.idlenessMs = 3_600_000;
    c.allowedLatenessMs = 60_000;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    long appliedBefore = TransactionVirtualIpResolver.UPDATES_APPLIED.get();
    JobClient job = env.executeAsync("transactions-vip-it");
    try {
      // With two records the job cannot use: they go to the DLQ, the good mappings still apply.
      ServiceMapping udp = ServiceMapping.newBuilder().setVip("10.96.1.12").setPort(53).setProtocol("UDP")
          .setBackends(List.of()).build();
      stack.produce(List.of(mapping("10.96.1.10", "10.0.1.2", "10.0.1.3"),
          new ProducerRecord<>("vip-maps", 0, "10.96.1.99:80", new byte[] {(byte) 0xC3, 0x01, 1}),
          new ProducerRecord<>("vip-maps", 0, "10.96.1.12:53", StreamJobHarness.bytes(ServiceMapping.getEncoder().encode(udp))),
          mapping("10.96.1.11", "10.0.1.2")));
      // The transaction resolver must have both mappings before the transactions come.
      stack.await(() -> TransactionVirtualIpResolver.UPDATES_APPLIED.get() >= appliedBefore + 2,
          () -> "mappings applied: " + (TransactionVirtualIpResolver.UPDATES_APPLIED.get() - appliedBefore));

      List<ProducerRecord<String, byte[]>> tx = new ArrayList<>();
      // W0 = [t0, t0 + 10 s). PA (10.0.1.1:41000) -> VIP 1, 30 + 10 transactions; the client first.
      tx.add(vipRecord(stats(TransactionRole.CLIENT, "host-v", "10.0.1.1", 41000, "10.96.1.10", 80, 110, 5100,
          t0 + 5 * S, 30, 3000, 30_000, new long[] {2 * MS}, new long[] {30})));
      tx.add(vipRecord(stats(TransactionRole.CLIENT, "host-v", "10.0.1.1", 41000, "10.96.1.10", 80, 110, 5100,
          t0 + 9 * S, 10, 1000, 10_000, new long[] {2 * MS}, new long[] {10})));
      // PB served them (it saw the client's real endpoint), one interval less (the last 10 in one).
      tx.add(vipRecord(stats(TransactionRole.SERVER, "host-w", "10.0.1.2", 8080, "10.0.1.1", 41000, 210, 6100,
          t0 + 6 * S, 40, 4000, 40_000, new long[] {MS}, new long[] {40})));
      // PC (10.0.1.5, client port 0: merged short connections) -> VIP 2, and PB's merged records of them.
      tx.add(vipRecord(stats(TransactionRole.CLIENT, "host-x", "10.0.1.5", 0, "10.96.1.11", 80, 310, 7100,
          t0 + 4 * S, 7, 700, 7000, new long[] {3 * MS}, new long[] {7})));
      tx.add(vipRecord(stats(TransactionRole.SERVER, "host-w", "10.0.1.2", 8080, "10.0.1.5", 0, 210, 6100,
          t0 + 4 * S, 7, 700, 7000, new long[] {2 * MS}, new long[] {7})));
      // W1: moves the watermark past W0's end.
      tx.add(vipRecord(stats(TransactionRole.CLIENT, "host-v", "10.0.1.1", 41000, "10.96.1.10", 80, 110, 5100,
          t0 + 16 * S, 1, 100, 1000, new long[] {2 * MS}, new long[] {1})));
      stack.produce(tx);
      // The agents' clock: their ResourceSamples of W1 (the edge windows' time is the transactions'
      // and the samples').
      List<ProducerRecord<String, byte[]>> res = new ArrayList<>();
      for (String host : List.of("host-v", "host-w", "host-x")) {
        res.add(new ProducerRecord<>("vip-res", 0, host,
            ResourceMetricsIT.encode(ResourceMetricsIT.sample(ResourceScope.HOST, host, t0 + 16 * S, S, 1.0, true, 1, 1))));
      }
      stack.produce(res);

      long w0 = t0 + 10 * S;
      String ab = "P:" + pa + ">P:" + pb;
      String cb = "P:" + pc + ">P:" + pb;
      stack.await(() -> vipEdges().keySet().containsAll(List.of(ab + "@" + w0, cb + "@" + w0)),
          () -> "W0 edges through the VIPs: " + vipEdges().keySet());
      Map<String, EdgeMetrics> e = vipEdges();
      assertEquals(List.of(ab + "@" + w0, cb + "@" + w0),
          e.keySet().stream().filter(k -> k.endsWith("@" + w0)).sorted().toList(),
          "exactly one edge per VIP connection in W0, no External VIP or client");
      EdgeMetrics a = e.get(ab + "@" + w0);
      assertEquals(0, a.getRevision());
      assertEquals(40, a.getClientTransactions());
      assertEquals(40, a.getServerTransactions());
      assertEquals(4.0, a.getRequestRate(), 1e-12);
      assertEquals(4000, a.getRequestBytes());
      assertEquals(40_000, a.getResponseBytes());
      within(2 * MS, a.getClientRttP50Ns());
      within(MS, a.getServerTimeP50Ns());
      EdgeMetrics m = e.get(cb + "@" + w0);
      assertEquals(7, m.getClientTransactions());
      assertEquals(7, m.getServerTransactions());
      assertEquals(700, m.getRequestBytes());
      assertEquals(7000, m.getResponseBytes());
      within(3 * MS, m.getClientRttP50Ns());

      // Neo4j: the window on the connection graph's edges.
      await(() -> count("MATCH (:Process {id: '" + pa + "'})-[t:TALKS_TO]->(:Process {id: '" + pb + "'}) "
          + "WHERE t.latencyWindowEndNs = " + w0 + " RETURN count(t)") == 1
          && count("MATCH (:Process {id: '" + pc + "'})-[t:TALKS_TO]->(:Process {id: '" + pb + "'}) "
          + "WHERE t.latencyWindowEndNs = " + w0 + " RETURN count(t)") == 1, "W0 on the VIP edges in Neo4j");
      Value t = single("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) RETURN t", Map.of("a", pa, "b", pb));
      assertEquals(4.0, t.get("requestRate").asDouble(), 1e-12);
      assertEquals(4000, t.get("windowRequestBytes").asLong());
      assertEquals(40_000, t.get("windowResponseBytes").asLong());

      // The two bad mappings, with their reasons and origin.
      await(() -> stack.readAll("vip-dlq").size() >= 2, "2 dead letters of the mappings topic");
      List<ConsumerRecord<byte[], byte[]>> dead = new ArrayList<>(stack.readAll("vip-dlq"));
      assertEquals(2, dead.size());
      dead.sort(Comparator.comparingLong(r -> Long.parseLong(StreamJobHarness.header(r, DeadLetterSerializer.OFFSET))));
      assertTrue(StreamJobHarness.header(dead.get(0), DeadLetterSerializer.REASON).startsWith("undecodable: "));
      assertEquals("invalid: protocol UDP is not correlated", StreamJobHarness.header(dead.get(1), DeadLetterSerializer.REASON));
      assertEquals("vip-maps", StreamJobHarness.header(dead.get(1), DeadLetterSerializer.TOPIC));
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /** A service mapping VIP:80 -> backends:8080 on the mappings topic of the VIP test. */
  static ProducerRecord<String, byte[]> mapping(String vip, String... backends) throws Exception {
    ServiceMapping m = ServiceMapping.newBuilder().setVip(vip).setPort(80).setNamespace("shop").setService("svc")
        .setBackends(java.util.Arrays.stream(backends)
            .map(b -> ServiceBackend.newBuilder().setAddress(b).setPort(8080).build()).toList())
        .build();
    return new ProducerRecord<>("vip-maps", 0, vip + ":80", StreamJobHarness.bytes(ServiceMapping.getEncoder().encode(m)));
  }

  static ProducerRecord<String, byte[]> vipRecord(TransactionStats s) throws Exception {
    return new ProducerRecord<>("vip-tx", 0, s.getHostId(), StreamJobHarness.bytes(TransactionStats.getEncoder().encode(s)));
  }

  /** The latest revision of every edge window of the VIP test, External ends included: "key@windowEndNs". */
  static Map<String, EdgeMetrics> vipEdges() {
    Map<String, EdgeMetrics> m = new TreeMap<>();
    for (ConsumerRecord<byte[], byte[]> r : stack.readAll("vip-edges")) {
      EdgeMetrics e;
      try {
        e = WattgraphSchemas.edgeMetricsDecoder().decode(r.value());
      } catch (Exception ex) {
        throw new AssertionError(ex);
      }
      m.merge(new String(r.key(), StandardCharsets.UTF_8) + "@" + e.getWindowEndNs(), e,
          (x, y) -> y.getRevision() >= x.getRevision() ? y : x);
    }
    return m;
  }

  static TransactionStats routes(TransactionStats s, HttpRouteStats... routes) {
    s.setHttpRoutes(List.of(routes));
    return s;
  }

  /** A route with these latencies (as in stats()); its transactions are their count. */
  static HttpRouteStats route(String method, String path, boolean truncated, long[] valuesNs, long[] counts) {
    List<Integer> buckets = new ArrayList<>();
    List<Long> cs = new ArrayList<>();
    for (int i = 0; i < valuesNs.length; i++) {
      buckets.add(bucket(valuesNs[i]));
      cs.add(counts[i]);
    }
    return HttpRouteStats.newBuilder().setMethod(method).setPath(path).setPathTruncated(truncated)
        .setTransactions(cs.stream().mapToLong(Long::longValue).sum()).setLatencyBuckets(buckets)
        .setLatencyCounts(cs).build();
  }

  static List<String> routeKeys(List<WindowHttpRoute> routes) {
    return routes.stream().map(r -> r.getRole() + " " + r.getMethod() + " " + r.getPath()
        + (r.getPathTruncated() ? "…" : "")).toList();
  }

  static TransactionStats client(long endNs, long n, long req, long resp, long[] rttNs, long[] counts) {
    return stats(TransactionRole.CLIENT, "host-a", "10.0.0.1", 40000, "10.0.0.2", 8080, 100, 5000, endNs, n, req,
        resp, rttNs, counts);
  }

  static TransactionStats server(long endNs, long n, long req, long resp, long[] timesNs, long[] counts) {
    return stats(TransactionRole.SERVER, "host-b", "10.0.0.2", 8080, "10.0.0.1", 40000, 200, 6000, endNs, n, req,
        resp, timesNs, counts);
  }

  static TransactionStats stats(TransactionRole role, String host, String localIp, int localPort, String remoteIp,
      int remotePort, int tgid, long start, long endNs, long n, long req, long resp, long[] valuesNs, long[] counts) {
    List<Integer> buckets = new ArrayList<>();
    List<Long> cs = new ArrayList<>();
    for (int i = 0; i < valuesNs.length; i++) {
      buckets.add(bucket(valuesNs[i]));
      cs.add(counts[i]);
    }
    TransactionStats.Builder b = TransactionStats.newBuilder().setHostId(host).setIntervalStartNs(endNs - S)
        .setIntervalEndNs(endNs).setRole(role)
        .setLocalAddress(new TransactionAddress(IpAddresses.parse(localIp).bytes())).setLocalPort(localPort)
        .setRemoteAddress(new TransactionAddress(IpAddresses.parse(remoteIp).bytes())).setRemotePort(remotePort)
        .setTgid(tgid).setProcessStartTimeNs(start).setComm(role == TransactionRole.CLIENT ? "curl" : "nginx")
        .setCgroupId(1).setNetnsInode(2).setSocketCookie(3).setClosed(false)
        .setTransactions(n).setRequestBytes(req).setResponseBytes(resp);
    if (role == TransactionRole.CLIENT) {
      b.setClientRttBuckets(buckets).setClientRttCounts(cs);
    } else {
      b.setServerTimeBuckets(buckets).setServerTimeCounts(cs);
    }
    return b.build();
  }

  static int bucket(long ns) {
    return TransactionHistograms.bucketOf(ns, 7);
  }

  /** Keyed by the canonical connection, as the agent keys them. */
  static ProducerRecord<String, byte[]> txRecord(TransactionStats s) throws Exception {
    return new ProducerRecord<>("tx", 0, "10.0.0.1:40000>10.0.0.2:8080",
        StreamJobHarness.bytes(TransactionStats.getEncoder().encode(s)));
  }

  /** The reported percentile is in the true value's bucket, so within 2^-8 of it. */
  /** Octave bucket counts of durations (ns → count), by the bounds' definition: below 2^12, then per power of two. */
  static long[] octaves(Map<Long, Long> durations) {
    long[] out = new long[TransactionHistograms.OCTAVE_BUCKETS];
    durations.forEach((ns, n) -> out[Math.min(TransactionHistograms.OCTAVE_BUCKETS - 1,
        Math.max(0, 63 - Long.numberOfLeadingZeros(ns) - TransactionHistograms.OCTAVE_MIN + 1))] += n);
    return out;
  }

  static void within(long trueNs, Long reported) {
    assertEquals(bucket(trueNs), bucket(reported), "bucket of " + reported + " vs " + trueNs);
    assertTrue(Math.abs(reported - trueNs) <= trueNs / 256.0, reported + " vs " + trueNs);
  }

  static void near(double expected, Double actual, double bound) {
    assertTrue(actual != null && Math.abs(actual - expected) <= bound, actual + " vs " + expected + " +- " + bound);
  }

  static Map<String, WindowMetrics> metrics() {
    return ResourceMetricsIT.byKeyAndWindow(stack.readAll("metrics"));
  }

  static Map<String, EdgeMetrics> edges() {
    return edgesByKeyAndWindow(stack.readAll("edges"));
  }

  /** The latest revision of each edge window, keyed "Kafka key@windowEndNs"; checks key and timestamp. */
  static Map<String, EdgeMetrics> edgesByKeyAndWindow(List<ConsumerRecord<byte[], byte[]>> records) {
    Map<String, EdgeMetrics> m = new TreeMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      EdgeMetrics e;
      try {
        e = WattgraphSchemas.edgeMetricsDecoder().decode(r.value());
      } catch (Exception ex) {
        throw new AssertionError(ex);
      }
      String key = new String(r.key(), StandardCharsets.UTF_8);
      assertEquals("P:" + e.getClientId() + ">P:" + e.getServerId(), key);
      assertEquals(e.getWindowEndNs() / 1_000_000L, r.timestamp());
      m.merge(key + "@" + e.getWindowEndNs(), e, (a, b) -> b.getRevision() >= a.getRevision() ? b : a);
    }
    return m;
  }

  /** Waits for a condition; on timeout the message has the output topics' offsets and windows. */
  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    stack.await(condition, () -> what + "\n" + stack.offsets("metrics", "edges", "dlq") + "\nmetrics "
        + metrics().keySet() + "\nedges " + edges().keySet());
  }

  static void write(String cypher, Map<String, Object> params) {
    stack.write(cypher, params);
  }

  static Value single(String cypher, Map<String, Object> params) {
    return stack.single(cypher, params).get(0);
  }

  static long count(String cypher) {
    return stack.count(cypher, Map.of());
  }
}
