package io.wattgraph.stream;

import io.wattgraph.stream.connection.EdgeRow;
import io.wattgraph.stream.sink.kafka.DeadLetterSerializer;
import io.wattgraph.stream.sink.kafka.EdgeMetricsSerializer;
import io.wattgraph.stream.sink.kafka.NamespaceMetricsSerializer;
import io.wattgraph.stream.sink.kafka.WindowMetricsSerializer;
import io.wattgraph.stream.sink.neo4j.CgroupGraphWriter;
import io.wattgraph.stream.sink.neo4j.ConnectionGraphWriter;
import io.wattgraph.stream.sink.neo4j.EdgeMetricsGraphWriter;
import io.wattgraph.stream.sink.neo4j.Neo4jSink;
import io.wattgraph.stream.sink.neo4j.NodeMetricsGraphWriter;
import io.wattgraph.stream.source.DeadLetter;
import io.wattgraph.stream.transaction.EdgeMetricsRow;
import io.wattgraph.stream.window.CgroupRow;
import io.wattgraph.stream.window.LateSampleCounter;
import io.wattgraph.stream.window.MetricsRow;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.KafkaSinkBuilder;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.kafka.clients.producer.ProducerConfig;

/**
 * The job's outputs ({@code sink/}): the connection graph and the latest windows to Neo4j (one
 * writer each: Neo4j is the bottleneck anyway, and a single writer cannot deadlock itself on shared
 * nodes), window results and dead letters to Kafka, exactly once; late window inputs counted.
 */
final class Sinks {
  private final JobConfig config;

  Sinks(JobConfig config) {
    this.config = config;
  }

  /** Edge totals onto the graph; one writer also cannot race an orphan-External delete against a new edge. */
  void connectionGraph(DataStream<EdgeRow> edges) {
    Neo4jSink.sinkTo(edges, config.neo4j(), ConnectionGraphWriter::new)
        .uid("neo4j-sink")
        .name("neo4j")
        .setParallelism(1);
  }

  /** Entity and namespace windows: late inputs counted, results to their topics and onto the graph's nodes. */
  void entityAndNamespaceWindows(SingleOutputStreamOperator<MetricsRow> entities,
      SingleOutputStreamOperator<MetricsRow> namespaces) {
    entities.getSideOutput(CorrelationJob.LATE)
        .union(namespaces.getSideOutput(CorrelationJob.LATE))
        .sinkTo(LateSampleCounter.windowInputs())
        .uid("late-samples")
        .name("count late samples");
    entities.sinkTo(exactlyOnce(new WindowMetricsSerializer(config.metricsTopic), "metrics"))
        .uid("metrics-kafka-sink")
        .name("kafka: " + config.metricsTopic);
    namespaces.sinkTo(exactlyOnce(new NamespaceMetricsSerializer(config.namespaceMetricsTopic), "namespace-metrics"))
        .uid("namespace-metrics-kafka-sink")
        .name("kafka: " + config.namespaceMetricsTopic);
    // One metrics sink for all nodes: Namespace rows are batched with the others.
    int historyWindows = config.historyWindows;
    int shares = config.latencyShareWindows();
    DataStream<MetricsRow> rows = entities.union(namespaces);
    Neo4jSink.sinkTo(rows, config.neo4j(), s -> new NodeMetricsGraphWriter(s, historyWindows, shares))
        .uid("metrics-neo4j-sink")
        .name("neo4j: window metrics")
        .setParallelism(1);
  }

  /** Edge windows: late inputs counted, results to their topic and onto the TALKS_TO edges. */
  void edgeWindows(SingleOutputStreamOperator<EdgeMetricsRow> edges) {
    edges.getSideOutput(CorrelationJob.LATE_EDGES)
        .sinkTo(LateSampleCounter.edgeInputs())
        .uid("late-edge-inputs")
        .name("count late edge inputs");
    edges.sinkTo(exactlyOnce(new EdgeMetricsSerializer(config.edgeMetricsTopic), "edge-metrics"))
        .uid("edge-metrics-kafka-sink")
        .name("kafka: " + config.edgeMetricsTopic);
    int shares = config.latencyShareWindows();
    Neo4jSink.sinkTo(edges, config.neo4j(), s -> new EdgeMetricsGraphWriter(s, shares))
        .uid("edge-metrics-neo4j-sink")
        .name("neo4j: edge metrics")
        .setParallelism(1);
  }

  /** Container windows: late inputs counted, results onto the Container nodes (no topic of their own). */
  void containerWindows(SingleOutputStreamOperator<CgroupRow> containers) {
    containers.getSideOutput(CorrelationJob.LATE_CGROUPS)
        .sinkTo(LateSampleCounter.records())
        .uid("late-cgroup-stats")
        .name("count late cgroup stats");
    int historyWindows = config.historyWindows;
    Neo4jSink.sinkTo(containers, config.neo4j(), s -> new CgroupGraphWriter(s, historyWindows))
        .uid("cgroup-neo4j-sink")
        .name("neo4j: container cgroups")
        .setParallelism(1);
  }

  /** Dead letters become visible to read_committed consumers with each checkpoint. */
  void deadLetters(DataStream<DeadLetter> deadLetters) {
    deadLetters.sinkTo(exactlyOnce(new DeadLetterSerializer(config.dlqTopic), "dlq"))
        .uid("dlq-sink")
        .name("kafka: " + config.dlqTopic);
  }

  /**
   * Transactional, visible to read_committed consumers with each checkpoint; {@code name} makes the
   * transactional id prefix ({@code groupId-name}) unique per sink.
   */
  private <T> KafkaSink<T> exactlyOnce(KafkaRecordSerializationSchema<T> serializer, String name) {
    KafkaSinkBuilder<T> sink = KafkaSink.<T>builder()
        .setBootstrapServers(config.kafkaBrokers)
        .setRecordSerializer(serializer)
        .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .setTransactionalIdPrefix(config.groupId + "-" + name)
        // Must not exceed the broker's transaction.max.timeout.ms (15 min by default).
        .setProperty(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, String.valueOf(JobConfig.TRANSACTION_TIMEOUT_MS));
    // After the job's own: an operator's transaction.timeout.ms (a broker with a lower maximum) wins.
    KafkaClientProperties.producer(config).forEach(sink::setProperty);
    return sink.build();
  }
}
