package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionRole;
import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import io.wattgraph.schema.ServiceBackend;
import io.wattgraph.schema.ServiceMapping;
import io.wattgraph.schema.TransactionRole;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.schema.WindowMetrics;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A checkpoint of the whole job written by an earlier build restores into this one: Flink keeps the
 * class names of state types and serializer snapshots and the operators' uids in every checkpoint,
 * so a class of the state moved or renamed, or a uid changed, fails here (the job fails to start
 * from the checkpoint), as it would fail a restarted job on a cluster.
 *
 * <p>{@code state/job-493e1ed/_metadata} was written by the build before stream-jobs was laid out
 * in packages by stage (493e1ed), with {@link #writeTheCheckpoint} run by hand on that build (every
 * state handle inlined in the one file). Its state: a closed connection on the edge P:A>P:B, a
 * service mapping (VIP to one backend), host-a's ResourceSamples and a CLIENT TransactionStats
 * record of window W0, whose windows are still open and whose SERVER record has not come. Restored,
 * the same records are on fresh topics and deleted (as retention deletes them: the sources resume
 * after them); the records that follow count together with the restored state: the edge's totals,
 * the VIP's backend, the open windows, the waiting transaction record. With empty state
 * ({@code --restore none}) every check fails (verified: 1 connection, 2.0 CPU seconds, 0 client
 * transactions).
 */
class CheckpointCompatibilityIT {
  static final long T0 = ResourceMetricsIT.T0;
  static final long S = ResourceMetricsIT.S;
  static final String CHECKPOINT = "/state/job-493e1ed/_metadata";
  static final String CLIENT = "host-a/1001/5000";
  static final String SERVER = "host-b/2002/6000";
  static final String VIP = "10.96.7.10";

  StreamJobHarness stack;

  @BeforeEach
  void startStack() throws Exception {
    stack = StreamJobHarness.start("checkpoint");
    stack.createTopics(1, "cc.connections", "cc.mappings", "cc.resources", "cc.transactions", "cc.metrics",
        "cc.namespace-metrics", "cc.edge-metrics", "cc.dlq");
  }

  @AfterEach
  void stopStack() {
    stack.close();
  }

  @Test
  void aCheckpointOfTheBuildBeforeRestoresEveryOperatorsState() throws Exception {
    Path restore = stack.root.resolve("restore");
    Files.createDirectories(restore);
    try (InputStream in = getClass().getResourceAsStream(CHECKPOINT)) {
      assertTrue(in != null, CHECKPOINT);
      // A copy: the run claims the checkpoint and deletes it once its own checkpoints subsume it.
      Files.copy(in, restore.resolve("_metadata"), StandardCopyOption.REPLACE_EXISTING);
    }
    // The records before the checkpoint, then gone as retention would remove them: the restored
    // sources resume at their end, and a job without the state could not rebuild it from them.
    stack.produce(before());
    deleteAllRecords();
    JobConfig c = config();
    c.restore = restore.toUri().toString();
    // A few restarts, then the job fails with the cause: a restore that cannot work fails every time.
    StreamExecutionEnvironment env = StreamJobHarness.environment(true);
    CorrelationJob.build(env, c);
    JobClient job = env.executeAsync("checkpoint-restore");
    try {
      stack.produce(after());
      // Connections A (restored totals), A2 and V (through the VIP, by the restored mapping).
      await(job, () -> edge().equals(List.of(3L, 15L, 150L)), () -> "3 connections, 15 and 150 bytes on "
          + CLIENT + " -> " + SERVER + ": " + edge());
      // W0 of host-a: a sample and the client's transactions before the checkpoint, a sample after.
      await(job, () -> hostWindow() != null, () -> "host-a's window W0 on cc.metrics");
      WindowMetrics w = hostWindow();
      assertEquals(3.0, w.getCpuSeconds(), w.toString());
      assertEquals(2, w.getSamples(), w.toString());
      assertEquals(10L, w.getClientTransactions(), w.toString());
      // The CLIENT record waited in TransactionEdges' state for its SERVER record, which came after.
      await(job, () -> edgeWindow() != null, () -> "the edge's window W0 on cc.edge-metrics");
      EdgeMetrics e = edgeWindow();
      assertEquals(10L, e.getClientTransactions(), e.toString());
      assertEquals(10L, e.getServerTransactions(), e.toString());
    } finally {
      if (!job.getJobStatus().get().isGloballyTerminalState()) {
        job.cancel().get(1, TimeUnit.MINUTES);
      }
    }
  }

  /**
   * Writes the fixture: run by hand on the build whose state is to be restored later, e.g.
   * {@code mvn -o -pl stream-jobs -am verify -Dtest=CheckpointCompatibilityIT#writeTheCheckpoint
   * -Dsurefire.failIfNoSpecifiedTests=false -Dwattgraph.writeCheckpoint=$PWD/stream-jobs/src/test/resources/state/job-COMMIT}.
   */
  @Test
  @EnabledIfSystemProperty(named = "wattgraph.writeCheckpoint", matches = ".+")
  void writeTheCheckpoint() throws Exception {
    Path target = Paths.get(System.getProperty("wattgraph.writeCheckpoint"));
    stack.produce(before());
    JobConfig c = config();
    // A neutral directory: the state handles' names (kept in _metadata) hold its path.
    Path dir = Paths.get("/tmp/wattgraph-checkpoint-fixture");
    org.apache.flink.util.FileUtils.deleteDirectory(dir.toFile());
    c.checkpointDir = dir.toUri().toString();
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    // Every state handle in _metadata (at most 1 MiB each), so the one file is the whole checkpoint.
    env.configure(new org.apache.flink.configuration.Configuration()
        .set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, MemorySize.parse("1m")));
    CorrelationJob.build(env, c);
    JobClient job = env.executeAsync("checkpoint-write");
    String latest;
    try {
      await(job, () -> edge().equals(List.of(1L, 7L, 70L)), () -> "connection A on the edge: " + edge());
      // Records of the other topics were read with those of the connections (all produced before the
      // start); two more checkpoints after the edge was written hold everything.
      for (int i = 0; i < 2; i++) {
        String before = LatestCheckpoint.under(c.checkpointDir).orElse("");
        await(job, () -> !latestCheckpoint(c).equals(before), () -> "a checkpoint newer than " + before);
      }
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
    latest = LatestCheckpoint.under(c.checkpointDir).orElseThrow();
    Path chk = Paths.get(java.net.URI.create(latest));
    try (Stream<Path> files = Files.list(chk)) {
      assertEquals(List.of("_metadata"), files.map(p -> p.getFileName().toString()).toList(),
          "every state handle inlined");
    }
    Files.createDirectories(target);
    Files.copy(chk.resolve("_metadata"), target.resolve("_metadata"), StandardCopyOption.REPLACE_EXISTING);
  }

  /** Both runs: one subtask, one partition per topic, no idleness (only records move time on). */
  JobConfig config() {
    JobConfig c = StreamJobHarness.withTopics(stack.config("cc"), "cc");
    c.parallelism = 1;
    c.checkpointIntervalMs = 300;
    c.idlenessMs = 3_600_000;
    return c;
  }

  /** What the earlier build read before its checkpoint. */
  static List<ProducerRecord<String, byte[]>> before() throws Exception {
    List<ProducerRecord<String, byte[]>> r = new ArrayList<>();
    ServiceMapping m = ServiceMapping.newBuilder().setVip(VIP).setPort(80).setNamespace("shop").setService("b")
        .setBackends(List.of(ServiceBackend.newBuilder().setAddress("10.7.0.2").setPort(8080).build())).build();
    r.add(new ProducerRecord<>("cc.mappings", 0, VIP + ":80", StreamJobHarness.bytes(ServiceMapping.getEncoder().encode(m))));
    r.addAll(connection(40001, "10.7.0.2", 8080, 7, 70));
    r.add(sample(ResourceScope.HOST, T0 + 5 * S, S));
    r.add(sample(ResourceScope.PROCESS, T0 + 5 * S, S / 2));
    r.add(transaction(TransactionRole.CLIENT, T0 + 5 * S));
    return r;
  }

  /** What follows the checkpoint; window W1's records move the watermark past W0. */
  static List<ProducerRecord<String, byte[]>> after() throws Exception {
    List<ProducerRecord<String, byte[]>> r = new ArrayList<>();
    r.addAll(connection(40002, "10.7.0.2", 8080, 5, 50));
    r.addAll(connection(40003, VIP, 80, 3, 30));
    r.add(sample(ResourceScope.HOST, T0 + 9 * S, 2 * S));
    r.add(transaction(TransactionRole.SERVER, T0 + 5 * S));
    r.add(sample(ResourceScope.HOST, T0 + 25 * S, S));
    r.add(sample(ResourceScope.PROCESS, T0 + 25 * S, S));
    r.add(transaction(TransactionRole.CLIENT, T0 + 25 * S));
    r.add(transaction(TransactionRole.SERVER, T0 + 25 * S));
    return r;
  }

  /**
   * Opened and closed on both ends: the client (host-a, 10.7.0.1:port) dialled {@code dialled}, the
   * server (host-b) saw it from the client's real address.
   */
  static List<ProducerRecord<String, byte[]>> connection(int port, String dialled, int dialledPort, long c2s,
      long s2c) throws Exception {
    List<ProducerRecord<String, byte[]>> r = new ArrayList<>();
    for (ConnectionEventKind kind : List.of(ConnectionEventKind.OPENED, ConnectionEventKind.CLOSED)) {
      boolean closed = kind == ConnectionEventKind.CLOSED;
      long t = T0 + (closed ? 2 : 1) * S;
      ConnectionEvent client = CorrelationJobIT.event("host-a", 1001, "curl", null, null, kind, ConnectionRole.CLIENT,
          "10.7.0.1", port, dialled, dialledPort, t, closed ? c2s : 0, closed ? s2c : 0, port);
      ConnectionEvent server = CorrelationJobIT.event("host-b", 2002, "nginx", null, null, kind, ConnectionRole.SERVER,
          "10.7.0.2", 8080, "10.7.0.1", port, t, closed ? s2c : 0, closed ? c2s : 0, 100_000 + port);
      for (ConnectionEvent e : List.of(client, server)) {
        r.add(new ProducerRecord<>("cc.connections", 0, CorrelationJobIT.kafkaKey(e), CorrelationJobIT.encode(e)));
      }
    }
    return r;
  }

  /** host-a's HOST record, or the client process's PROCESS record, of the interval ending at endNs. */
  static ProducerRecord<String, byte[]> sample(ResourceScope scope, long endNs, long cpuNs) throws Exception {
    ResourceSample s = ResourceMetricsIT.sample(scope, "host-a", endNs, cpuNs, 1.0, true, 2, 1);
    if (scope == ResourceScope.PROCESS) {
      s.setTgid(1001);
      s.setProcessStartTimeNs(5000);
      s.setComm("curl");
    }
    return new ProducerRecord<>("cc.resources", 0, "host-a", ResourceMetricsIT.encode(s));
  }

  /** Ten transactions of the connection A client (host-a) -> server (host-b), one end's record. */
  static ProducerRecord<String, byte[]> transaction(TransactionRole role, long endNs) throws Exception {
    boolean client = role == TransactionRole.CLIENT;
    TransactionStats s = TransactionMetricsIT.stats(role, client ? "host-a" : "host-b", client ? "10.7.0.1" : "10.7.0.2",
        client ? 40001 : 8080, client ? "10.7.0.2" : "10.7.0.1", client ? 8080 : 40001, client ? 1001 : 2002,
        client ? 5000 : 6000, endNs, 10, 100, 1000, new long[] {1_000_000}, new long[] {10});
    return new ProducerRecord<>("cc.transactions", 0, "10.7.0.1:40001>10.7.0.2:8080",
        StreamJobHarness.bytes(TransactionStats.getEncoder().encode(s)));
  }

  /** Connections and bytes of the TALKS_TO edge client -> server (empty while there is none). */
  List<Long> edge() {
    List<org.neo4j.driver.Record> r = stack.list("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) "
        + "RETURN t.connections AS n, t.bytesClientToServer AS c2s, t.bytesServerToClient AS s2c",
        Map.of("a", CLIENT, "b", SERVER));
    return r.isEmpty() ? List.of()
        : List.of(r.get(0).get("n").asLong(), r.get(0).get("c2s").asLong(), r.get(0).get("s2c").asLong());
  }

  /** host-a's HOST window W0, latest revision; null while there is none. */
  WindowMetrics hostWindow() {
    return ResourceMetricsIT.byKeyAndWindow(stack.readAll("cc.metrics")).values().stream()
        .filter(w -> w.getLevel().name().equals("HOST") && w.getWindowStartNs() == T0).findFirst().orElse(null);
  }

  /** The edge window W0 client process -> server process, latest revision; null while there is none. */
  EdgeMetrics edgeWindow() {
    return TransactionMetricsIT.edgesByKeyAndWindow(stack.readAll("cc.edge-metrics"))
        .get("P:" + CLIENT + ">P:" + SERVER + "@" + (T0 + 10 * S));
  }

  /** Deletes every record of the input topics (the log start moves to their end). */
  void deleteAllRecords() throws Exception {
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafka.bootstrapServers()))) {
      Map<TopicPartition, RecordsToDelete> all = new java.util.HashMap<>();
      for (String topic : List.of("cc.connections", "cc.mappings", "cc.resources", "cc.transactions")) {
        TopicPartition p = new TopicPartition(topic, 0);
        long end = admin.listOffsets(Map.of(p, OffsetSpec.latest())).partitionResult(p).get().offset();
        all.put(p, RecordsToDelete.beforeOffset(end));
      }
      admin.deleteRecords(all).all().get();
    }
  }

  String latestCheckpoint(JobConfig c) {
    try {
      return LatestCheckpoint.under(c.checkpointDir).orElse("");
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Waits for the condition; fails at once, with the job's failure, when the job is no longer running. */
  void await(JobClient job, java.util.function.BooleanSupplier condition, java.util.function.Supplier<String> what)
      throws InterruptedException {
    stack.await(() -> {
      JobStatus status;
      try {
        status = job.getJobStatus().get();
      } catch (Exception e) {
        throw new AssertionError(e);
      }
      if (status.isGloballyTerminalState()) {
        try {
          job.getJobExecutionResult().get();
        } catch (Exception e) {
          throw new AssertionError("the job ended (" + status + ") before: " + what.get(), e);
        }
        throw new AssertionError("the job ended (" + status + ") before: " + what.get());
      }
      return condition.getAsBoolean();
    }, what);
  }
}
