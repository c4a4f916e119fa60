package io.wattgraph.stream;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

/**
 * Kafka ConnectionEvents to the Neo4j connection graph:
 * source, correlate both ends of each connection, sum connections per edge, write to Neo4j.
 */
public final class CorrelationJob {
  private CorrelationJob() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 1 && (args[0].equals("--help") || args[0].equals("-h"))) {
      System.out.println(JobConfig.USAGE);
      return;
    }
    JobConfig config;
    try {
      config = JobConfig.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("correlation-job: " + e.getMessage());
      System.err.println(JobConfig.USAGE);
      System.exit(2);
      return;
    }
    // The same code runs in a local MiniCluster or, when submitted, on a Flink cluster.
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    build(env, config);
    env.execute("wattgraph-correlation");
  }

  /** Adds the whole pipeline to {@code env}; tests and the system test call this in-process. */
  public static void build(StreamExecutionEnvironment env, JobConfig config) {
    configureCheckpoints(env, config);
    if (config.parallelism != null) {
      env.setParallelism(config.parallelism);
    }

    KafkaSourceBuilder<Observation> source = KafkaSource.<Observation>builder()
        .setBootstrapServers(config.kafkaBrokers)
        .setTopics(config.topic)
        .setGroupId(config.groupId)
        // Resume where the group left off; a new group reads everything there is.
        .setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
        .setDeserializer(new ConnectionEventDeserializer());
    if (config.bounded) {
      source.setBounded(OffsetsInitializer.latest());
    }

    DataStream<Observation> observations = env
        .fromSource(source.build(), WatermarkStrategy.noWatermarks(), "kafka: " + config.topic)
        .uid("kafka-connection-events");

    DataStream<ConnectionUpdate> connections = observations
        .keyBy(new ByConnection())
        .process(new ConnectionCorrelator(config.pairingHorizonMs))
        .uid("correlate-connections")
        .name("correlate connections");

    DataStream<EdgeRow> edges = connections
        .keyBy(new ByEdge())
        .process(new EdgeAggregator())
        .uid("aggregate-edges")
        .name("aggregate edges");

    edges.sinkTo(new Neo4jSink(config.neo4j()))
        .uid("neo4j-sink")
        .name("neo4j")
        // One writer: Neo4j is the bottleneck anyway, and a single writer cannot deadlock itself
        // on shared nodes nor race an orphan-External delete against a new edge.
        .setParallelism(1);
  }

  private static void configureCheckpoints(StreamExecutionEnvironment env, JobConfig config) {
    env.enableCheckpointing(config.checkpointIntervalMs, CheckpointingMode.EXACTLY_ONCE);
    if (config.checkpointDir != null) {
      Configuration c = new Configuration();
      c.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
      c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, config.checkpointDir);
      env.configure(c);
    }
  }

  /** Both ends of a connection share the sorted endpoint pair. */
  static final class ByConnection implements KeySelector<Observation, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Observation o) {
      return o.connectionKey();
    }
  }

  static final class ByEdge implements KeySelector<ConnectionUpdate, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(ConnectionUpdate u) {
      return u.edgeKey;
    }
  }
}
