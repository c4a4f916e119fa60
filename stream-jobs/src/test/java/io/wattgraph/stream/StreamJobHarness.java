package io.wattgraph.stream;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.Neo4jServer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Record;
import org.neo4j.driver.Session;

/**
 * The integration tests' stack: local-stack's real Kafka broker and real Neo4j (one of each per
 * test class, started in-process), a Bolt driver, and the helpers the tests share to run the job in
 * a MiniCluster, produce, read committed output and wait for the graph.
 */
public final class StreamJobHarness implements AutoCloseable {
  final KafkaBroker kafka;
  final Path root;
  private Neo4jServer neo4j;
  private Driver driver;

  private StreamJobHarness(Path root, KafkaBroker kafka, Neo4jServer neo4j) {
    this.root = root;
    this.kafka = kafka;
    this.neo4j = neo4j;
    this.driver = GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none());
  }

  /** Starts Kafka and Neo4j under {@code target/it-data/NAME-<millis>}. */
  static StreamJobHarness start(String name) throws Exception {
    Path root = Paths.get("target", "it-data", name + "-" + System.currentTimeMillis()).toAbsolutePath();
    Files.createDirectories(root);
    KafkaBroker kafka = KafkaBroker.start(root.resolve("kafka"), 0, 0);
    try {
      return new StreamJobHarness(root, kafka, Neo4jServer.start(root.resolve("neo4j"), 0));
    } catch (RuntimeException | Error e) {
      kafka.close();
      throw e;
    }
  }

  @Override
  public void close() {
    driver.close();
    if (neo4j != null) {
      neo4j.close();
    }
    kafka.close();
  }

  String boltUri() {
    return neo4j.boltUri();
  }

  /** Stops Neo4j (an outage); {@link #startNeo4jAgain()} brings it back on the same port and store. */
  int stopNeo4j() {
    int port = neo4j.boltPort();
    neo4j.close();
    neo4j = null;
    return port;
  }

  void startNeo4jAgain(int port) {
    neo4j = Neo4jServer.start(root.resolve("neo4j"), port);
  }

  void createTopics(int partitions, String... topics) throws Exception {
    for (String t : topics) {
      kafka.createTopic(t, partitions);
    }
  }

  /** A job config pointing at this stack, with the given consumer group. */
  JobConfig config(String group) {
    JobConfig c = new JobConfig();
    c.kafkaBrokers = kafka.bootstrapServers();
    c.neo4jUri = neo4j.boltUri();
    c.groupId = group;
    return c;
  }

  /** Every topic of the job named PREFIX.connections, PREFIX.mappings, PREFIX.resources, ... */
  static JobConfig withTopics(JobConfig c, String prefix) {
    c.topic = prefix + ".connections";
    c.serviceMappingsTopic = prefix + ".mappings";
    c.resourcesTopic = prefix + ".resources";
    c.transactionsTopic = prefix + ".transactions";
    c.cgroupsTopic = prefix + ".cgroups";
    c.metricsTopic = prefix + ".metrics";
    c.namespaceMetricsTopic = prefix + ".namespace-metrics";
    c.edgeMetricsTopic = prefix + ".edge-metrics";
    c.dlqTopic = prefix + ".dlq";
    return c;
  }

  /** A local environment; with {@code restarts}, fixed-delay restarts (3 attempts, 200 ms) for failure tests. */
  static StreamExecutionEnvironment environment(boolean restarts) {
    Configuration conf = new Configuration();
    if (restarts) {
      conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
      conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
      conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(200));
    }
    return StreamExecutionEnvironment.createLocalEnvironment(conf);
  }

  /** A checkpoint directory of its own per test (under the stack's data directory). */
  String checkpointDir(String name) {
    return root.resolve("checkpoints-" + name).toUri().toString();
  }

  /** Runs a bounded job to its end (it stops at the offsets that were latest at start). */
  static void runToEnd(StreamExecutionEnvironment env, String name) throws Exception {
    JobClient job = env.executeAsync(name);
    try {
      job.getJobExecutionResult().get(3, TimeUnit.MINUTES);
    } catch (Exception e) {
      job.cancel();
      throw e;
    }
  }

  /** Sends each record and waits for its acknowledgement (acks=all), in order. */
  void produce(List<ProducerRecord<String, byte[]>> records) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
      for (ProducerRecord<String, byte[]> r : records) {
        producer.send(r).get();
      }
    }
  }

  /** Every committed record of a topic (read_committed), read up to its end offsets of now. */
  List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
    return readAll(topic, "read_committed");
  }

  /** Every record of a topic at the given isolation level, read up to its end offsets of now. */
  List<ConsumerRecord<byte[], byte[]>> readAll(String topic, String isolation) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> parts = c.partitionsFor(topic).stream()
          .map(i -> new TopicPartition(topic, i.partition())).toList();
      c.assign(parts);
      c.seekToBeginning(parts);
      Map<TopicPartition, Long> end = c.endOffsets(parts);
      while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
        c.poll(Duration.ofMillis(200)).forEach(out::add);
      }
    }
    return out;
  }

  /** Per topic: end offsets and last stable offsets (an open transaction holds the latter back). */
  String offsets(String... topics) {
    StringBuilder b = new StringBuilder();
    for (String topic : topics) {
      for (String isolation : List.of("read_uncommitted", "read_committed")) {
        b.append(topic).append(' ').append(isolation).append(" end ").append(endOffsets(topic, isolation).values())
            .append("; ");
      }
    }
    return b.toString();
  }

  /** True while a partition of the topic holds records of a transaction not yet committed or aborted. */
  boolean openTransaction(String topic) {
    return !endOffsets(topic, "read_uncommitted").equals(endOffsets(topic, "read_committed"));
  }

  private Map<TopicPartition, Long> endOffsets(String topic, String isolation) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    try (KafkaConsumer<byte[], byte[]> c =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      return c.endOffsets(c.partitionsFor(topic).stream().map(i -> new TopicPartition(topic, i.partition())).toList());
    }
  }

  static String header(ConsumerRecord<byte[], byte[]> r, String name) {
    return new String(r.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
  }

  public static byte[] bytes(ByteBuffer b) {
    byte[] bytes = new byte[b.remaining()];
    b.get(bytes);
    return bytes;
  }

  void write(String cypher, Map<String, Object> params) {
    try (Session s = driver.session()) {
      s.executeWrite(tx -> tx.run(cypher, params).consume());
    }
  }

  /** The single record of a read query (fails if there is none or more than one). */
  Record single(String cypher, Map<String, Object> params) {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> tx.run(cypher, params).single());
    }
  }

  List<Record> list(String cypher, Map<String, Object> params) {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> tx.run(cypher, params).list());
    }
  }

  /** A query returning one count. */
  long count(String cypher, Map<String, Object> params) {
    return single(cypher, params).get(0).asLong();
  }

  /** The whole graph as sorted text: labels and properties of nodes, and of relationships. */
  List<String> dump() {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> {
        Stream<String> nodes = tx.run("MATCH (n) RETURN labels(n) AS l, properties(n) AS p").list().stream()
            .map(r -> "node " + r.get("l").asList() + " " + new TreeMap<>(r.get("p").asMap()));
        Stream<String> rels = tx.run("MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS t, b.id AS b, "
                + "properties(r) AS p").list().stream()
            .map(r -> "rel " + r.get("a").asString() + " -" + r.get("t").asString() + "-> "
                + r.get("b").asString() + " " + new TreeMap<>(r.get("p").asMap()));
        return Stream.concat(nodes, rels).sorted(Comparator.naturalOrder()).toList();
      });
    }
  }

  /** Waits for a condition; on timeout fails with {@code what} and the graph. */
  void await(BooleanSupplier condition, String what) throws InterruptedException {
    await(condition, () -> what);
  }

  /**
   * Polls every 100 ms. The 120 s deadline only turns a hang into a failure (not a timing
   * assumption); the message is built then, with the whole graph when Neo4j is up.
   */
  void await(BooleanSupplier condition, Supplier<String> what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        String graph;
        try {
          graph = String.join("\n", dump());
        } catch (RuntimeException e) {
          graph = "(graph unavailable: " + e + ")";
        }
        throw new AssertionError("timed out waiting for: " + what.get() + "\n" + graph);
      }
      Thread.sleep(100);
    }
  }

  /**
   * Identity map that throws once, on its first record after {@code half} records, and only after
   * a checkpoint completed with the first half seen (so recovery starts from that checkpoint); or,
   * armed with {@link #armOnTrigger}, on its first record after the test set {@code trigger}.
   * Progress is per run name and JVM-wide: the MiniCluster runs in the test's JVM, and the
   * function itself is serialized into the job.
   */
  static final class FailOnce<T> implements MapFunction<T, T>, CheckpointListener {
    private static final long serialVersionUID = 1L;
    private static final Map<String, Progress> RUNS = new ConcurrentHashMap<>();
    private final String run;

    static final class Progress {
      final long half;
      final boolean onTrigger;
      final AtomicBoolean trigger = new AtomicBoolean();
      final AtomicLong seen = new AtomicLong();
      final AtomicBoolean checkpointedFirstHalf = new AtomicBoolean();
      final AtomicBoolean failed = new AtomicBoolean();

      Progress(long half, boolean onTrigger) {
        this.half = half;
        this.onTrigger = onTrigger;
      }
    }

    FailOnce(String run) {
      if (!RUNS.containsKey(run)) {
        throw new IllegalStateException("FailOnce run " + run + " not armed");
      }
      this.run = run;
    }

    /** Starts (or restarts) the count of run {@code run}. */
    static Progress arm(String run, long half) {
      Progress p = new Progress(half, false);
      RUNS.put(run, p);
      return p;
    }

    /** As {@link #arm}, but fails only once {@code trigger} is set ({@code half} still marks the checkpoint). */
    static Progress armOnTrigger(String run, long half) {
      Progress p = new Progress(half, true);
      RUNS.put(run, p);
      return p;
    }

    @Override
    public T map(T value) {
      Progress p = RUNS.get(run);
      long n = p.seen.incrementAndGet();
      boolean due = p.onTrigger ? p.trigger.get() : n > p.half && p.checkpointedFirstHalf.get();
      if (due && p.failed.compareAndSet(false, true)) {
        throw new IllegalStateException("injected task failure after " + n + " records");
      }
      return value;
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
      Progress p = RUNS.get(run);
      if (p.seen.get() >= p.half) {
        p.checkpointedFirstHalf.set(true);
      }
    }
  }
}
