package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.Neo4jServer;
import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionRole;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
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
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;

/**
 * Failure and replay guarantees with a real Kafka and a real Neo4j in a MiniCluster: a task
 * failure in the middle of the stream (recovery from the last checkpoint), and a Neo4j outage
 * (the sink blocks and retries). Either way the graph's totals afterwards equal the input exactly.
 */
class FailureRecoveryIT {
  static KafkaBroker kafka;
  static Neo4jServer neo4j;
  static Path neo4jDir;
  static Driver driver;

  @BeforeAll
  static void startStack() throws Exception {
    Path root = Paths.get("target", "it-data", "recovery-" + System.currentTimeMillis()).toAbsolutePath();
    Files.createDirectories(root);
    kafka = KafkaBroker.start(root.resolve("kafka"), 0, 0);
    neo4jDir = root.resolve("neo4j");
    neo4j = Neo4jServer.start(neo4jDir, 0);
    driver = GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none());
  }

  @AfterAll
  static void stopStack() {
    if (driver != null) {
      driver.close();
    }
    if (neo4j != null) {
      neo4j.close();
    }
    if (kafka != null) {
      kafka.close();
    }
  }

  /** Throws once, on the first record of the second half, after a checkpoint has completed. */
  static final class FailOnce implements MapFunction<Observation, Observation>, CheckpointListener {
    private static final long serialVersionUID = 1L;
    static final AtomicLong SEEN = new AtomicLong();
    static final AtomicBoolean CHECKPOINTED_FIRST_HALF = new AtomicBoolean();
    static final AtomicBoolean FAILED = new AtomicBoolean();
    static volatile long half = Long.MAX_VALUE;

    @Override
    public Observation map(Observation o) {
      long n = SEEN.incrementAndGet();
      if (n > half && CHECKPOINTED_FIRST_HALF.get() && FAILED.compareAndSet(false, true)) {
        throw new IllegalStateException("injected task failure after " + n + " records");
      }
      return o;
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
      if (SEEN.get() >= half) {
        CHECKPOINTED_FIRST_HALF.set(true);
      }
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
    kafka.createTopic(topic, 2);
    Expected expected = new Expected();
    List<ConnectionEvent> first = generate("fail", 0, 200, expected);
    List<ConnectionEvent> second = generate("fail", 200, 200, expected);
    FailOnce.half = first.size();
    JobClient job = start(topic, "recovery-failure", s -> s.map(new FailOnce()).name("fail once"));
    try {
      produce(topic, first);
      await(FailOnce.CHECKPOINTED_FIRST_HALF::get, "a checkpoint after the first half");
      produce(topic, second);
      await(FailOnce.FAILED::get, "the injected failure");
      await(() -> edges("fail").equals(expected.edges), () -> "exact totals after recovery: expected "
          + expected.edges + "\nbut graph has " + edges("fail"));
      assertEquals(0, externals(), "no External node: every connection found its peer");
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  @Test
  void neo4jOutageBlocksTheSinkWhichRetriesUntilTotalsAreExact() throws Exception {
    String topic = "recovery.outage";
    kafka.createTopic(topic, 2);
    Expected expected = new Expected();
    List<ConnectionEvent> before = generate("outage", 0, 100, expected);
    Map<String, List<Long>> beforeEdges = new TreeMap<>(expected.edges);
    List<ConnectionEvent> during = generate("outage", 100, 100, expected);
    JobClient job = start(topic, "recovery-outage", s -> s.map(new Count()).name("count"));
    try {
      produce(topic, before);
      await(() -> edges("outage").equals(beforeEdges), () -> "first half in the graph: " + edges("outage"));

      int port = neo4j.boltPort();
      long retriesBefore = Neo4jSinkWriter.UNAVAILABLE_RETRIES.get();
      long seenBefore = Count.SEEN.get();
      neo4j.close();
      produce(topic, during);
      await(() -> Count.SEEN.get() >= seenBefore + during.size(), () -> "job consumed the second half");
      await(() -> Neo4jSinkWriter.UNAVAILABLE_RETRIES.get() > retriesBefore, () -> "sink retrying");
      neo4j = Neo4jServer.start(neo4jDir, port);

      await(() -> edges("outage").equals(expected.edges), () -> "exact totals after the outage: expected "
          + expected.edges + "\nbut graph has " + edges("outage"));
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  JobClient start(String topic, String group,
      java.util.function.UnaryOperator<org.apache.flink.streaming.api.datastream.DataStream<Observation>> tap)
      throws Exception {
    JobConfig c = new JobConfig();
    c.kafkaBrokers = kafka.bootstrapServers();
    c.topic = topic;
    c.groupId = group;
    c.dlqTopic = topic + ".dlq";
    c.neo4jUri = neo4j.boltUri();
    c.parallelism = 2;
    c.checkpointIntervalMs = 300;
    c.neo4jDriverRetryMs = 500;
    c.checkpointDir = Paths.get("target", "it-data", "recovery-checkpoints").toAbsolutePath().toUri().toString();
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(200));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(conf);
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
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
      for (ConnectionEvent e : events) {
        producer.send(new ProducerRecord<>(topic, CorrelationJobIT.kafkaKey(e), CorrelationJobIT.encode(e)));
      }
      producer.flush();
    }
  }

  /** TALKS_TO totals between processes of the hosts whose id starts with tag. */
  static Map<String, List<Long>> edges(String tag) {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> {
        Map<String, List<Long>> m = new TreeMap<>();
        tx.run("MATCH (c:Process)-[t:TALKS_TO]->(s) WHERE c.hostId STARTS WITH $tag "
                + "RETURN c.id AS c, s.id AS s, t.bytesClientToServer AS c2s, t.bytesServerToClient AS s2c, "
                + "t.connections AS n", Map.of("tag", tag + "-"))
            .forEachRemaining(r -> m.put(r.get("c").asString() + ">" + r.get("s").asString(),
                List.of(r.get("c2s").asLong(), r.get("s2c").asLong(), r.get("n").asLong())));
        return m;
      });
    } catch (RuntimeException e) {
      return Map.of(); // Neo4j restarting
    }
  }

  static long externals() {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> tx.run("MATCH (x:External) RETURN count(x)").single().get(0).asLong());
    }
  }

  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    await(condition, () -> what);
  }

  /** Polls with a generous upper bound (a hang, not a performance limit). */
  static void await(BooleanSupplier condition, java.util.function.Supplier<String> what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for: " + what.get());
      }
      Thread.sleep(100);
    }
  }
}
