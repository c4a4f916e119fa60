package io.wattgraph.stream;

import io.wattgraph.stream.connection.ConnectionCorrelator;
import io.wattgraph.stream.connection.ConnectionUpdate;
import io.wattgraph.stream.connection.ConnectionsPerEdge;
import io.wattgraph.stream.connection.EdgeRow;
import io.wattgraph.stream.sink.kafka.DeadLetterSerializer;
import io.wattgraph.stream.sink.kafka.ExactlyOnceKafkaSink;
import io.wattgraph.stream.sink.neo4j.ConnectionGraphWriter;
import io.wattgraph.stream.sink.neo4j.Neo4jSink;
import io.wattgraph.stream.source.ConnectionEventDeserializer;
import io.wattgraph.stream.source.DeadLetter;
import io.wattgraph.stream.source.DecodedMapping;
import io.wattgraph.stream.source.DecodedObservation;
import io.wattgraph.stream.source.Observation;
import io.wattgraph.stream.source.ServiceMappingDeserializer;
import io.wattgraph.stream.source.SplitDeadLetters;
import io.wattgraph.stream.vip.AbstractVirtualIpResolver;
import io.wattgraph.stream.vip.ConnectionVirtualIpResolver;
import io.wattgraph.stream.vip.DataTimeBroadcastOperator;
import io.wattgraph.stream.window.MetricInput;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.execution.RecoveryClaimMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.errors.TopicExistsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka ConnectionEvents to the Neo4j connection graph:
 * source, correlate both ends of each connection, sum connections per edge, write to Neo4j; and
 * Kafka ResourceSamples to windowed CPU/power metrics ({@link ResourceMetrics}) on the metrics
 * topic and the graph's nodes.
 */
public final class CorrelationJob {
  private static final Logger LOG = LoggerFactory.getLogger(CorrelationJob.class);

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
    build(env, config, UnaryOperator.identity());
  }

  /**
   * As {@link #build(StreamExecutionEnvironment, JobConfig)}, with {@code tap} applied to the valid
   * observations before correlation (tests inject failures or count records there).
   */
  public static void build(StreamExecutionEnvironment env, JobConfig config,
      UnaryOperator<DataStream<Observation>> tap) {
    build(env, config, tap, UnaryOperator.identity());
  }

  /** As above, with {@code metricsTap} applied to the window inputs (tests inject failures there). */
  public static void build(StreamExecutionEnvironment env, JobConfig config,
      UnaryOperator<DataStream<Observation>> tap, UnaryOperator<DataStream<MetricInput>> metricsTap) {
    configureCheckpoints(env, config);
    if (config.parallelism != null) {
      env.setParallelism(config.parallelism);
    }

    KafkaSourceBuilder<DecodedObservation> source = KafkaSource.<DecodedObservation>builder()
        .setBootstrapServers(config.kafkaBrokers)
        .setProperties(KafkaClientProperties.source(config))
        .setTopics(config.topic)
        .setGroupId(config.groupId)
        // Resume where the group left off; a new group reads everything there is.
        .setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
        .setDeserializer(new ConnectionEventDeserializer());
    if (config.bounded) {
      source.setBounded(OffsetsInitializer.latest());
    }

    SingleOutputStreamOperator<Observation> decoded = env
        .fromSource(source.build(), WatermarkStrategy.noWatermarks(), "kafka: " + config.topic)
        .uid("kafka-connection-events")
        .process(new SplitDeadLetters<>(), TypeInformation.of(Observation.class))
        .uid("split-dead-letters")
        .name("split dead letters");
    SingleOutputStreamOperator<ServiceMappingUpdate> mappings = serviceMappings(env, config);
    // Windowed CPU/power metrics from the agents' ResourceSamples (and the TransactionStats, whose
    // VIPs the same mappings resolve); their dead letters share the DLQ.
    DataStream<DeadLetter> resourceDeadLetters = ResourceMetrics.build(env, config, metricsTap, mappings);
    decoded.getSideOutput(SplitDeadLetters.DEAD_LETTERS)
        .union(resourceDeadLetters, mappings.getSideOutput(SplitDeadLetters.DEAD_LETTERS))
        .sinkTo(deadLetterSink(config))
        .uid("dlq-sink")
        .name("kafka: " + config.dlqTopic);
    DataStream<Observation> observations = tap.apply(decoded);

    correlate(observations, mappings, config)
        .sinkTo(new Neo4jSink<>(config.neo4j(), ConnectionGraphWriter::new))
        .uid("neo4j-sink")
        .name("neo4j")
        // One writer: Neo4j is the bottleneck anyway, and a single writer cannot deadlock itself
        // on shared nodes nor race an orphan-External delete against a new edge.
        .setParallelism(1);
  }

  /**
   * The core of the job, from valid observations and service mappings to edge rows: resolve
   * virtual IPs, correlate both ends, sum per edge. The benchmark runs exactly this.
   */
  public static DataStream<EdgeRow> correlate(DataStream<Observation> observations,
      DataStream<ServiceMappingUpdate> mappingUpdates, JobConfig config) {
    // The mappings carry no event time: the correlator's END_OF_INPUT timers fire when the observations end.
    DataStream<Observation> resolved = DataTimeBroadcastOperator.connect(observations.keyBy(new ByClientEndpoint()),
            mappingUpdates, new ConnectionVirtualIpResolver(config.pairingHorizonMs, config.closedRetention()),
            TypeInformation.of(Observation.class), "resolve virtual IPs", AbstractVirtualIpResolver.BROADCAST_STATES)
        .uid("resolve-virtual-ips");

    DataStream<ConnectionUpdate> connections = resolved
        .keyBy(new ByConnection())
        .process(new ConnectionCorrelator(config.pairingHorizonMs, config.closedRetention(), config.idleTimeoutMs,
            config.duplicateHorizonMs, config.sheddingPeerMemoryMs))
        .uid("correlate-connections")
        .name("correlate connections");

    return connections
        .keyBy(new ByEdge())
        .process(new ConnectionsPerEdge())
        .uid("aggregate-edges")
        .name("aggregate edges");
  }

  /**
   * Virtual service addresses (Kubernetes ClusterIPs, DNAT): mappings from the compacted topic, for
   * the resolvers of both the connection and the transaction path (broadcast to each, keyed by the
   * client endpoint both views share).
   */
  static SingleOutputStreamOperator<ServiceMappingUpdate> serviceMappings(StreamExecutionEnvironment env,
      JobConfig config) {
    KafkaSourceBuilder<DecodedMapping> mappingSource = KafkaSource.<DecodedMapping>builder()
        .setBootstrapServers(config.kafkaBrokers)
        .setProperties(KafkaClientProperties.source(config))
        .setGroupId(config.groupId + "-service-mappings")
        // A compacted topic is the whole current mapping: always read it from the start.
        .setStartingOffsets(OffsetsInitializer.earliest())
        .setDeserializer(new ServiceMappingDeserializer());
    if (config.bounded) {
      // A bounded source over a topic that does not exist would wait for splits forever.
      ensureTopic(config, config.serviceMappingsTopic, Map.of("cleanup.policy", "compact"));
      mappingSource.setTopics(config.serviceMappingsTopic).setBounded(OffsetsInitializer.latest());
    } else {
      // A pattern, not a topic list: the job starts (with no mappings) before the topic exists and
      // picks it up once it does.
      mappingSource.setTopicPattern(Pattern.compile(Pattern.quote(config.serviceMappingsTopic)))
          .setProperty("partition.discovery.interval.ms", "10000");
    }
    return env
        .fromSource(mappingSource.build(), WatermarkStrategy.noWatermarks(), "kafka: " + config.serviceMappingsTopic)
        .uid("kafka-service-mappings")
        .setParallelism(1)
        .process(new SplitDeadLetters<>(), TypeInformation.of(ServiceMappingUpdate.class))
        .uid("split-service-mappings")
        .name("split service mappings")
        .setParallelism(1);
  }

  /** Creates the topic (default settings, one partition) unless it exists: bounded sources need it. */
  static void ensureTopic(JobConfig config, String topic) {
    ensureTopic(config, topic, Map.of());
  }

  /** Creates the topic (one partition, the given topic configs) unless it exists. */
  static void ensureTopic(JobConfig config, String topic, Map<String, String> configs) {
    try (Admin admin = Admin.create(KafkaClientProperties.admin(config))) {
      if (!admin.listTopics().names().get().contains(topic)) {
        admin.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()).configs(configs)))
            .all().get();
      }
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new IllegalStateException("cannot create topic " + topic, e);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Exactly-once: dead letters become visible to read_committed consumers with each checkpoint. */
  static KafkaSink<DeadLetter> deadLetterSink(JobConfig config) {
    return ExactlyOnceKafkaSink.of(config, new DeadLetterSerializer(config.dlqTopic), "dlq");
  }

  /**
   * Checkpoints every {@code --checkpoint-interval-ms}; with a directory, kept when the job is
   * cancelled or its process stops, and a new run starts from the newest of them ({@code --restore}):
   * a restart of the whole job (the embedded stack's {@code bin/wattgraph run} again, a job manager
   * without HA) continues with its correlator, edge totals and windows instead of empty state, which
   * would overwrite the graph's totals with those of the new run only.
   */
  private static void configureCheckpoints(StreamExecutionEnvironment env, JobConfig config) {
    env.enableCheckpointing(config.checkpointIntervalMs, CheckpointingMode.EXACTLY_ONCE);
    Configuration c = new Configuration();
    if (config.checkpointDir != null) {
      c.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
      c.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, config.checkpointDir);
      c.set(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
          ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
    }
    String from = restorePath(config);
    if (from != null) {
      LOG.info("Restoring the job's state from {}", from);
      c.set(StateRecoveryOptions.SAVEPOINT_PATH, from);
      // The new run owns it: deleted once its own checkpoints subsume it, so runs do not pile up.
      c.set(StateRecoveryOptions.RESTORE_MODE, RecoveryClaimMode.CLAIM);
    } else {
      LOG.info("Starting with empty state (--restore {}, checkpoint directory {})", config.restore, config.checkpointDir);
    }
    env.configure(c);
  }

  /** The checkpoint {@code --restore} names, or null for empty state. */
  static String restorePath(JobConfig config) {
    if (JobConfig.RESTORE_NONE.equals(config.restore)) {
      return null;
    }
    if (!JobConfig.RESTORE_LATEST.equals(config.restore)) {
      return config.restore;
    }
    if (config.checkpointDir == null) {
      return null;
    }
    try {
      return LatestCheckpoint.under(config.checkpointDir).orElse(null);
    } catch (IOException e) {
      throw new IllegalStateException("cannot look for checkpoints under --checkpoint-dir " + config.checkpointDir, e);
    }
  }

  /** Both ends of a connection share the sorted endpoint pair. */
  public static final class ByConnection implements KeySelector<Observation, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Observation o) {
      return o.connectionKey();
    }
  }

  /** The client's endpoint, which both views of a connection share even through DNAT. */
  public static final class ByClientEndpoint implements KeySelector<Observation, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Observation o) {
      return switch (o.role) {
        case CLIENT -> o.localEndpoint();
        case SERVER -> o.remoteEndpoint();
        case UNKNOWN -> o.connectionKey();
      };
    }
  }

  public static final class ByEdge implements KeySelector<ConnectionUpdate, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(ConnectionUpdate u) {
      return u.edgeKey;
    }
  }
}
