package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.TreeSet;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.junit.jupiter.api.Test;

/**
 * Every operator of the job has a uid, and they are the uids of the job before its classes were laid
 * out in packages (493e1ed; {@code git grep -ho 'uid("[a-z0-9-]*")' 493e1ed -- stream-jobs/src/main}): a
 * checkpoint maps its state to operators by uid, so a uid changed or missing fails the restore or
 * loses that operator's state (CheckpointCompatibilityIT restores a checkpoint of that build). A
 * sink's committer takes its uid from its writer's.
 */
class JobUidsTest {
  static final List<String> UIDS = List.of("agent-clock", "aggregate-edges", "correlate-connections", "dlq-sink",
      "edge-metrics-kafka-sink", "edge-metrics-neo4j-sink", "edge-windows", "entity-inputs",
      "entity-transaction-inputs", "kafka-connection-events", "kafka-resource-samples", "kafka-service-mappings",
      "kafka-transaction-stats", "late-edge-inputs", "late-samples", "metrics-kafka-sink", "metrics-neo4j-sink",
      "namespace-inputs", "namespace-metrics-kafka-sink", "namespace-transaction-inputs", "namespace-windows",
      "neo4j-sink", "process-groups", "process-samples", "resolve-transaction-vips", "resolve-virtual-ips",
      "resource-windows", "split-dead-letters", "split-resource-samples", "split-service-mappings",
      "split-transaction-stats", "transaction-edges");
  /** Operators added since (a checkpoint without them restores; they start empty). */
  static final List<String> ADDED = List.of("cgroup-neo4j-sink", "container-windows", "kafka-cgroup-stats",
      "late-cgroup-stats", "masked-peers", "split-cgroup-stats");

  static final String COMMITTER = "Sink Committer: ";

  @Test
  void everyOperatorHasTheUidItHadBefore() {
    JobConfig c = new JobConfig();
    c.kafkaBrokers = "localhost:9";
    c.neo4jUri = "bolt://localhost:9";
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    CorrelationJob.build(env, c);
    StreamGraph graph = env.getStreamGraph();
    TreeSet<String> uids = new TreeSet<>();
    for (StreamNode n : graph.getStreamNodes()) {
      String uid = String.valueOf(n.getTransformationUID());
      String plain = uid.startsWith(COMMITTER) ? uid.substring(COMMITTER.length()) : uid;
      uids.add(UIDS.contains(plain) || ADDED.contains(plain) ? plain : uid);
    }
    TreeSet<String> expected = new TreeSet<>(UIDS);
    expected.addAll(ADDED);
    assertEquals(expected, uids);
  }
}
