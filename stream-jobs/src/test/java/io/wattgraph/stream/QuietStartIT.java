package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import io.wattgraph.schema.TransactionRole;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.stream.window.LateSampleCounter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.Value;

/**
 * A new user's first run, live and in real time, against local-stack's real Kafka and Neo4j: the
 * job starts, two "agents" (a thread producing what agents produce, stamped with the wall clock)
 * send their ResourceSamples every 200 ms, and nothing is requested for longer than the idleness and
 * the out-of-orderness, so the TransactionStats source goes idle before its first record. Then one
 * connection's both ends report transactions for 3 s, and the samples go on. Every transaction must
 * reach the edge windows (exact sums over the windows on the edge-metrics topic, nothing late) and
 * the TALKS_TO edge must get the request metrics.
 *
 * <p>Before the fix the transaction path's VIP resolver took its watermark from the service mappings
 * (the end of time, so as not to hold the transactions back) as soon as the transaction input went
 * idle: the edge windows' watermark jumped to Long.MAX_VALUE and every edge input after it was late.
 */
class QuietStartIT {
  static final long MS = 1_000_000L;
  static final String P1 = "host-a/100/5000";
  static final String P2 = "host-b/200/6000";
  static final String EDGE = "P:" + P1 + ">P:" + P2;

  static StreamJobHarness stack;

  @BeforeAll
  static void startStack() throws Exception {
    stack = StreamJobHarness.start("quiet-start");
  }

  @AfterAll
  static void stopStack() {
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void transactionsAfterAQuietStartReachTheEdgeWindows() throws Exception {
    // Two partitions, two subtasks: the transactions of the one connection leave a partition empty.
    stack.createTopics(2, "q-tx", "q-res", "q-conn", "q-metrics", "q-ns", "q-edges", "q-dlq", "q-maps");
    stack.write("MERGE (p1:Process {id: $p1}) SET p1.hostId = 'host-a', p1.pid = 100 "
        + "MERGE (p2:Process {id: $p2}) SET p2.hostId = 'host-b', p2.pid = 200 "
        + "MERGE (p1)-[t:TALKS_TO]->(p2) SET t.connections = 1", Map.of("p1", P1, "p2", P2));
    JobConfig c = stack.config("quiet-start");
    c.topic = "q-conn";
    c.resourcesTopic = "q-res";
    c.transactionsTopic = "q-tx";
    c.metricsTopic = "q-metrics";
    c.namespaceMetricsTopic = "q-ns";
    c.edgeMetricsTopic = "q-edges";
    c.dlqTopic = "q-dlq";
    c.serviceMappingsTopic = "q-maps";
    c.parallelism = 2;
    c.checkpointIntervalMs = 500;
    c.windowMs = 1000;
    c.maxOutOfOrdernessMs = 200;
    c.idlenessMs = 500;
    c.allowedLatenessMs = 1000;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    long lateBefore = LateSampleCounter.DROPPED.get();
    JobClient job = env.executeAsync("quiet-start-it");
    Agents agents = new Agents();
    Thread producer = new Thread(agents, "agents");
    try {
      producer.start();
      // Quiet: three windows of samples closed means at least 3 s without a transaction (the
      // samples carry the wall clock), six times the idleness.
      stack.await(() -> hostWindows() >= 3, () -> "3 windows of host-a's samples; " + stack.offsets("q-metrics"));
      agents.traffic(true);
      Thread.sleep(3000);
      agents.traffic(false);
      List<TransactionStats> sent = agents.sentTransactions();
      long clientSent = sent.stream().filter(t -> t.getRole() == TransactionRole.CLIENT)
          .mapToLong(TransactionStats::getTransactions).sum();
      long serverSent = sent.stream().filter(t -> t.getRole() == TransactionRole.SERVER)
          .mapToLong(TransactionStats::getTransactions).sum();
      long lastWindowEndNs = sent.stream().mapToLong(t -> windowEndNs(t.getIntervalEndNs())).max().orElseThrow();
      assertTrue(clientSent > 0 && serverSent > 0, "transactions were sent: " + sent.size());

      stack.await(() -> {
        List<EdgeMetrics> w = edgeWindows();
        return w.stream().mapToLong(EdgeMetrics::getClientTransactions).sum() == clientSent
            && w.stream().mapToLong(EdgeMetrics::getServerTransactions).sum() == serverSent;
      }, () -> "every transaction in the edge windows: client " + clientSent + ", server " + serverSent
          + "; windows " + edgeWindows().stream().map(e -> e.getWindowEndNs() + ":" + e.getClientTransactions()
              + "/" + e.getServerTransactions()).toList()
          + "; late inputs " + (LateSampleCounter.DROPPED.get() - lateBefore));
      List<EdgeMetrics> windows = edgeWindows();
      assertEquals(sent.stream().mapToLong(t -> windowEndNs(t.getIntervalEndNs())).distinct().count(), windows.size(),
          "one edge window per window with transactions");
      for (EdgeMetrics e : windows) {
        assertTrue(e.getClientRttP99Ns() != null && e.getServerTimeP99Ns() != null, e.toString());
      }
      assertEquals(0, LateSampleCounter.DROPPED.get() - lateBefore, "nothing late");
      stack.await(() -> stack.count("MATCH (:Process {id: $p1})-[t:TALKS_TO]->(:Process {id: $p2}) "
              + "WHERE t.latencyWindowEndNs = $end RETURN count(t)", Map.of("p1", P1, "p2", P2, "end", lastWindowEndNs)) == 1,
          "the last window on the TALKS_TO edge");
      Value t = stack.single("MATCH (:Process {id: $p1})-[t:TALKS_TO]->(:Process {id: $p2}) RETURN t",
          Map.of("p1", P1, "p2", P2)).get(0);
      for (String p : List.of("requestRate", "clientRttP50Ns", "clientRttP99Ns", "serverTimeP50Ns", "serverTimeP99Ns")) {
        assertTrue(!t.get(p).isNull(), p + " on the edge: " + t.asMap());
      }
    } finally {
      agents.stop.set(true);
      producer.join(10_000);
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /** End (ns) of the 1 s window holding an interval that ends at {@code intervalEndNs} (event time = end − 1 ns). */
  static long windowEndNs(long intervalEndNs) {
    long ms = (intervalEndNs - 1) / MS;
    return (ms - Math.floorMod(ms, 1000) + 1000) * MS;
  }

  static long hostWindows() {
    return ResourceMetricsIT.byKeyAndWindow(stack.readAll("q-metrics")).keySet().stream()
        .filter(k -> k.startsWith("HOST|host-a|")).count();
  }

  /** The latest revision of each window of the edge P1 -> P2. */
  static List<EdgeMetrics> edgeWindows() {
    return TransactionMetricsIT.edgesByKeyAndWindow(stack.readAll("q-edges")).entrySet().stream()
        .filter(e -> e.getKey().startsWith(EDGE + "@")).map(Map.Entry::getValue).toList();
  }

  /**
   * What two agents send, stamped with the wall clock: every 200 ms each host's HOST and PROCESS
   * samples of the last 200 ms and, while {@code traffic} is set, both ends' TransactionStats of
   * the connection P1 -> P2 for that interval (k + 1 transactions in the k-th).
   */
  static final class Agents implements Runnable {
    final AtomicBoolean stop = new AtomicBoolean();
    private boolean traffic;
    private final List<TransactionStats> sent = new ArrayList<>();

    /** Once this returns, no transaction record is sent unless traffic is turned on again. */
    synchronized void traffic(boolean on) {
      traffic = on;
    }

    synchronized List<TransactionStats> sentTransactions() {
      return List.copyOf(sent);
    }

    @Override
    public void run() {
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafka.bootstrapServers());
      p.put(ProducerConfig.ACKS_CONFIG, "all");
      try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
        int k = 0;
        while (!stop.get()) {
          long end = System.currentTimeMillis() * MS;
          for (String[] h : new String[][] {{"host-a", "100", "5000"}, {"host-b", "200", "6000"}}) {
            ResourceSample host = ResourceMetricsIT.sample(ResourceScope.HOST, h[0], end, 50 * MS, 1.0, true, 4, 2);
            ResourceSample proc = ResourceMetricsIT.sample(ResourceScope.PROCESS, h[0], end, 20 * MS, 0.5, true, 2, 1);
            proc.setTgid(Integer.parseInt(h[1]));
            proc.setProcessStartTimeNs(Long.parseLong(h[2]));
            for (ResourceSample s : List.of(host, proc)) {
              s.setIntervalStartNs(end - 200 * MS);
              producer.send(new ProducerRecord<>("q-res", h[0], ResourceMetricsIT.encode(s)));
            }
          }
          synchronized (this) {
            if (traffic) {
              long n = ++k;
              TransactionStats client = TransactionMetricsIT.client(end, n, 100 * n, 1000 * n, new long[] {2 * MS}, new long[] {n});
              TransactionStats server = TransactionMetricsIT.server(end, n, 100 * n, 1000 * n, new long[] {MS}, new long[] {n});
              for (TransactionStats s : List.of(client, server)) {
                s.setIntervalStartNs(end - 200 * MS);
                producer.send(new ProducerRecord<>("q-tx", "10.0.0.1:40000>10.0.0.2:8080",
                    StreamJobHarness.bytes(TransactionStats.getEncoder().encode(s))));
                sent.add(s);
              }
            }
          }
          producer.flush();
          Thread.sleep(200);
        }
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
