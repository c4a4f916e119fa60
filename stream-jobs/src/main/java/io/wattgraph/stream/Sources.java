package io.wattgraph.stream;

import io.wattgraph.stream.source.CgroupStatsDeserializer;
import io.wattgraph.stream.source.ConnectionEventDeserializer;
import io.wattgraph.stream.source.Decoded;
import io.wattgraph.stream.source.CgroupSample;
import io.wattgraph.stream.source.Sample;
import io.wattgraph.stream.source.Observation;
import io.wattgraph.stream.source.PerHostWatermarks;
import io.wattgraph.stream.source.ResourceSampleDeserializer;
import io.wattgraph.stream.source.ServiceMappingDeserializer;
import io.wattgraph.stream.source.SplitDeadLetters;
import io.wattgraph.stream.source.TransactionStatsDeserializer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.regex.Pattern;
import org.apache.flink.api.common.eventtime.SerializableTimestampAssigner;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * The job's five Kafka inputs, decoded ({@code source/}): ConnectionEvents and service mappings with
 * their dead letters split off (no event time), ResourceSamples, TransactionStats and CgroupStats with
 * their event time and watermarks (their dead letters are split off by the window steps, which the benchmark
 * runs from decoded records).
 */
public final class Sources {
  private final StreamExecutionEnvironment env;
  private final JobConfig config;

  Sources(StreamExecutionEnvironment env, JobConfig config) {
    this.env = env;
    this.config = config;
  }

  /** Valid observations; their dead letters on the {@link SplitDeadLetters#DEAD_LETTERS} side output. */
  SingleOutputStreamOperator<Observation> connectionEvents() {
    KafkaSourceBuilder<Decoded<Observation>> source = KafkaSource.<Decoded<Observation>>builder()
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
    return env
        .fromSource(source.build(), WatermarkStrategy.noWatermarks(), "kafka: " + config.topic)
        .uid("kafka-connection-events")
        .process(new SplitDeadLetters<>(), TypeInformation.of(Observation.class))
        .uid("split-dead-letters")
        .name("split dead letters");
  }

  /**
   * Virtual service addresses (Kubernetes ClusterIPs, DNAT): mappings from the compacted topic, for
   * the resolvers of both the connection and the transaction path (broadcast to each, keyed by the
   * client endpoint both views share); dead letters on the side output.
   */
  SingleOutputStreamOperator<ServiceMappingUpdate> serviceMappings() {
    KafkaSourceBuilder<Decoded<ServiceMappingUpdate>> mappingSource = KafkaSource.<Decoded<ServiceMappingUpdate>>builder()
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

  /** The ResourceSamples topic, decoded, with timestamps and watermarks per partition and host. */
  DataStream<Decoded<Sample>> resourceSamples() {
    // Given to the source, the strategy runs per Kafka partition (split): the source's watermark is
    // the minimum over its partitions, idle partitions excluded.
    return env
        .fromSource(agentTopicSource(config.resourcesTopic, "-resources", new ResourceSampleDeserializer()),
            sampleWatermarks(config), "kafka: " + config.resourcesTopic)
        .uid("kafka-resource-samples");
  }

  /**
   * The TransactionStats topic, decoded, with the same event-time settings as the ResourceSamples
   * (per partition, out-of-orderness, idleness), though not per host.
   */
  DataStream<Decoded<Transaction>> transactionStats() {
    return env
        .fromSource(agentTopicSource(config.transactionsTopic, "-transactions", new TransactionStatsDeserializer()),
            transactionWatermarks(config), "kafka: " + config.transactionsTopic)
        .uid("kafka-transaction-stats");
  }

  /**
   * The CgroupStats topic, decoded, with the ResourceSamples' event-time settings (per partition and
   * host): an agent reports every container every interval, as it does its ResourceSamples.
   */
  DataStream<Decoded<CgroupSample>> cgroupStats() {
    return env
        .fromSource(agentTopicSource(config.cgroupsTopic, "-cgroups", new CgroupStatsDeserializer()),
            cgroupWatermarks(config), "kafka: " + config.cgroupsTopic)
        .uid("kafka-cgroup-stats");
  }

  /**
   * A topic the agents write to (one consumer group per topic, resuming where it left off), as
   * the metric windows read it: bounded runs read to the end of a topic made if missing; live ones
   * follow a pattern, since the job may start before any agent created the topic.
   */
  private <T> KafkaSource<T> agentTopicSource(String topic, String groupSuffix,
      KafkaRecordDeserializationSchema<T> deserializer) {
    KafkaSourceBuilder<T> source = KafkaSource.<T>builder()
        .setBootstrapServers(config.kafkaBrokers)
        .setProperties(KafkaClientProperties.source(config))
        .setGroupId(config.groupId + groupSuffix)
        .setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
        .setDeserializer(deserializer);
    if (config.bounded) {
      ensureTopic(config, topic, Map.of());
      source.setTopics(topic).setBounded(OffsetsInitializer.latest());
    } else {
      source.setTopicPattern(Pattern.compile(Pattern.quote(topic)))
          .setProperty("partition.discovery.interval.ms", "10000");
    }
    return source.build();
  }

  /**
   * Event time = the sample's interval end; bounded out-of-orderness (disorder within a partition:
   * several hosts' clocks and delivery delays), idleness (a partition without records, e.g. its
   * hosts are gone, stops holding the watermark back).
   */
  public static WatermarkStrategy<Decoded<Sample>> sampleWatermarks(JobConfig config) {
    // Per host: every agent reports every interval, so a host that goes quiet is gone, and a host
    // whose clock is behind holds the watermark back instead of its samples being late.
    return perHost(config, d -> d.value == null ? null : d.value.hostId, (d, previous) -> d.eventTimeMs(Sample::eventTimeMs));
  }

  /** As {@link #sampleWatermarks}: per host, the interval end, the same bound and idleness. */
  public static WatermarkStrategy<Decoded<CgroupSample>> cgroupWatermarks(JobConfig config) {
    return perHost(config, d -> d.value == null ? null : d.value.hostId, (d, previous) -> d.eventTimeMs(CgroupSample::eventTimeMs));
  }

  private static <T> WatermarkStrategy<T> perHost(JobConfig config, PerHostWatermarks.HostOf<T> hostOf,
      SerializableTimestampAssigner<T> eventTimeMs) {
    long bound = config.maxOutOfOrdernessMs;
    long idleness = config.idlenessMs;
    return WatermarkStrategy.<T>forGenerator(
            ctx -> new PerHostWatermarks<>(hostOf, bound, idleness, ctx.getInputActivityClock()))
        .withTimestampAssigner(eventTimeMs);
  }

  /**
   * Flink's per-partition strategy on the records' interval ends: bounded out-of-orderness and
   * idleness of the partition. Not per host: an agent sends TransactionStats only for connections
   * with traffic, so a host without traffic would hold the watermark back for the whole idleness.
   */
  public static WatermarkStrategy<Decoded<Transaction>> transactionWatermarks(JobConfig config) {
    return WatermarkStrategy.<Decoded<Transaction>>forBoundedOutOfOrderness(Duration.ofMillis(config.maxOutOfOrdernessMs))
        .withTimestampAssigner((d, previous) -> d.eventTimeMs(Transaction::eventTimeMs))
        .withIdleness(Duration.ofMillis(config.idlenessMs));
  }

  /** Creates the topic (one partition, the given topic configs) unless it exists: bounded sources need it. */
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
}
