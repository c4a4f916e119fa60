package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionRole;
import io.wattgraph.schema.PoisonRecords.Poison;
import io.wattgraph.schema.PoisonRecords;
import io.wattgraph.schema.ResourceScope;
import io.wattgraph.stream.sink.kafka.DeadLetterSerializer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The crafted records on the real topics of a running job (local-stack's Kafka and Neo4j): each
 * is exactly one dead letter with its reason, no task of the job restarts, and the records after
 * them reach the graph. ConnectionEvents and ResourceSamples; the other inputs' deserializers get
 * the same records in PoisonRecordTest.
 */
class PoisonRecordIT {
  static final String CONN = "poison.connections";
  static final String RES = "poison.resources";
  static final String DLQ = "poison.dlq";
  static final long T0 = ResourceMetricsIT.T0;
  static final long S = ResourceMetricsIT.S;

  static StreamJobHarness stack;

  @BeforeAll
  static void startStack() throws Exception {
    stack = StreamJobHarness.start("poison");
    stack.createTopics(1, CONN, RES, DLQ, "poison.metrics", "poison.metrics.ns");
  }

  @AfterAll
  static void stopStack() {
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void poisonRecordsAreDeadLettersAndTheJobGoesOnWithoutRestart() throws Exception {
    JobConfig c = stack.config("poison");
    c.topic = CONN;
    c.resourcesTopic = RES;
    c.dlqTopic = DLQ;
    c.metricsTopic = "poison.metrics";
    c.namespaceMetricsTopic = "poison.metrics.ns";
    c.parallelism = 1;
    c.checkpointIntervalMs = 500;
    c.pairingHorizonMs = 500;
    c.maxOutOfOrdernessMs = 0;
    c.idlenessMs = 1000;
    // Restarts allowed (as in production), so that a failing task shows as a restart, not a dead job.
    StreamExecutionEnvironment env = StreamJobHarness.environment(true);
    CorrelationJob.build(env, c);

    Configuration conf = new Configuration();
    conf.set(RestOptions.BIND_PORT, "0");
    try (MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder().setConfiguration(conf)
        .setNumTaskManagers(1).setNumSlotsPerTaskManager(2).build())) {
      cluster.start();
      JobID job = cluster.submitJob(env.getStreamGraph()).get(1, TimeUnit.MINUTES).getJobID();

      List<Poison> connPoison = PoisonRecords.connectionEvents();
      List<Poison> resPoison = PoisonRecords.resourceSamples();
      List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
      records.add(record(CONN, CorrelationJobIT.encode(lone("host-p1", 41001))));
      connPoison.forEach(p -> records.add(new ProducerRecord<>(CONN, "poison", p.bytes())));
      records.add(record(CONN, CorrelationJobIT.encode(lone("host-p2", 41002))));
      for (int s : new int[] {5, 10}) {
        records.add(record(RES, ResourceMetricsIT.encode(host(s))));
      }
      resPoison.forEach(p -> records.add(new ProducerRecord<>(RES, "poison", p.bytes())));
      for (int s : new int[] {15, 25}) {
        records.add(record(RES, ResourceMetricsIT.encode(host(s))));
      }
      stack.produce(records);

      // What came after the poison reached the graph: the second connection, the window it closed.
      stack.await(() -> stack.count("MATCH (:Process {hostId: 'host-p2'})-[t:TALKS_TO]->(:External) RETURN count(t)",
          Map.of()) == 1, "host-p2's connection after the poison");
      stack.await(() -> stack.count("MATCH (h:Host {id: 'host-p'}) WHERE h.metricsWindowEndNs = $end RETURN count(h)",
          Map.of("end", T0 + 20 * S)) == 1, "host-p's window after the poison");
      assertEquals(1, stack.count("MATCH (:Process {hostId: 'host-p1'})-[t:TALKS_TO]->(:External) RETURN count(t)",
          Map.of()), "and the connection before it");
      int expected = connPoison.size() + resPoison.size();
      stack.await(() -> stack.readAll(DLQ).size() >= expected, expected + " dead letters committed");

      // One dead letter per bad record, each with its reason and origin.
      List<ConsumerRecord<byte[], byte[]>> dead = stack.readAll(DLQ);
      assertEquals(expected, dead.size(), () -> dead.stream().map(PoisonRecordIT::describe).toList().toString());
      Map<String, String> reasonByValue = new TreeMap<>(); // by topic and value: some bytes are sent to both
      for (ConsumerRecord<byte[], byte[]> r : dead) {
        reasonByValue.put(StreamJobHarness.header(r, DeadLetterSerializer.TOPIC) + " "
            + HexFormat.of().formatHex(r.value()), describe(r));
      }
      check(connPoison, CONN, reasonByValue);
      check(resPoison, RES, reasonByValue);

      // No task ever failed: the job is RUNNING, never RESTARTING, every task on its first attempt.
      AccessExecutionGraph graph = cluster.getExecutionGraph(job).get(1, TimeUnit.MINUTES);
      assertEquals(JobStatus.RUNNING, graph.getState());
      assertNull(graph.getFailureInfo(), () -> graph.getFailureInfo().getExceptionAsString());
      assertEquals(0, graph.getStatusTimestamp(JobStatus.RESTARTING));
      for (AccessExecutionVertex v : graph.getAllExecutionVertices()) {
        assertEquals(0, v.getCurrentExecutionAttempt().getAttemptNumber(), v.getTaskNameWithSubtaskIndex());
      }
      cluster.cancelJob(job).get(1, TimeUnit.MINUTES);
    }
  }

  private static void check(List<Poison> poison, String topic, Map<String, String> reasonByValue) {
    for (Poison p : poison) {
      String d = reasonByValue.get(topic + " " + HexFormat.of().formatHex(p.bytes()));
      assertTrue(d != null && d.startsWith(topic + " undecodable: ") && d.contains(p.expected()),
          () -> p + ": expected a dead letter from " + topic + " with '" + p.expected() + "', got " + d);
    }
  }

  private static String describe(ConsumerRecord<byte[], byte[]> r) {
    return StreamJobHarness.header(r, DeadLetterSerializer.TOPIC) + " "
        + StreamJobHarness.header(r, DeadLetterSerializer.REASON);
  }

  private static ProducerRecord<String, byte[]> record(String topic, byte[] value) {
    return new ProducerRecord<>(topic, "good", value);
  }

  /** A client end whose server no agent reports: an External edge after the pairing horizon. */
  private static ConnectionEvent lone(String host, int port) {
    return CorrelationJobIT.event(host, 7001, "java", null, null, ConnectionEventKind.SNAPSHOT, ConnectionRole.CLIENT,
        "10.9.0.1", port, "10.9.0.2", 9000, 1_000, 10, 20, port);
  }

  private static io.wattgraph.schema.ResourceSample host(int s) {
    return ResourceMetricsIT.sample(ResourceScope.HOST, "host-p", T0 + s * S, S, 10.0, true, 1, 1);
  }
}
