package io.wattgraph.stream;

import io.wattgraph.stream.sink.kafka.ExactlyOnceKafkaSink;
import io.wattgraph.stream.sink.kafka.NamespaceMetricsSerializer;
import io.wattgraph.stream.sink.kafka.WindowMetricsSerializer;
import io.wattgraph.stream.sink.neo4j.Neo4jSink;
import io.wattgraph.stream.sink.neo4j.NodeMetricsGraphWriter;
import io.wattgraph.stream.source.DeadLetter;
import io.wattgraph.stream.source.DecodedSample;
import io.wattgraph.stream.source.DecodedTransaction;
import io.wattgraph.stream.source.PerHostWatermarks;
import io.wattgraph.stream.source.ResourceSampleDeserializer;
import io.wattgraph.stream.source.SplitDeadLetters;
import io.wattgraph.stream.transaction.EdgeMetricsRow;
import io.wattgraph.stream.window.EntityWindowAggregate;
import io.wattgraph.stream.window.EntityWindowFunction;
import io.wattgraph.stream.window.LateSampleCounter;
import io.wattgraph.stream.window.MetricInput;
import io.wattgraph.stream.window.MetricsRow;
import io.wattgraph.stream.window.NamespaceWindowAggregate;
import io.wattgraph.stream.window.NamespaceWindowFunction;
import io.wattgraph.stream.window.SplitResourceSamples;
import java.time.Duration;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.OutputTag;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

/**
 * Windowed metrics: ResourceSamples (and, through {@link TransactionMetrics}, TransactionStats) from
 * Kafka, event-time tumbling windows per process, group, pod and host, results to the metrics topic
 * (exactly-once) and onto the graph's nodes; and windows per namespace over all hosts, to their own
 * topic (NamespaceMetrics, exactly-once) and onto Namespace nodes.
 */
public final class ResourceMetrics {
  private ResourceMetrics() {}

  /** Window inputs that came after their window's end plus the allowed lateness. */
  public static final OutputTag<MetricInput> LATE = new OutputTag<>("late-samples") {};

  /** The window results, and the dead letters of both inputs. */
  public record Results(SingleOutputStreamOperator<MetricsRow> entities,
      SingleOutputStreamOperator<MetricsRow> namespaces, SingleOutputStreamOperator<EdgeMetricsRow> edges,
      DataStream<DeadLetter> deadLetters) {}

  /** Adds the sources, the windows and their sinks; returns the dead letters for the shared DLQ sink. */
  static DataStream<DeadLetter> build(StreamExecutionEnvironment env, JobConfig config,
      UnaryOperator<DataStream<MetricInput>> tap, DataStream<ServiceMappingUpdate> mappings) {
    Results results = windows(source(env, config), TransactionMetrics.source(env, config), mappings, config, tap);
    SingleOutputStreamOperator<MetricsRow> rows = results.entities();
    SingleOutputStreamOperator<MetricsRow> namespaces = results.namespaces();
    rows.getSideOutput(LATE)
        .union(namespaces.getSideOutput(LATE))
        .sinkTo(LateSampleCounter.windowInputs())
        .uid("late-samples")
        .name("count late samples");
    rows.sinkTo(metricsSink(config))
        .uid("metrics-kafka-sink")
        .name("kafka: " + config.metricsTopic);
    namespaces.sinkTo(namespaceMetricsSink(config))
        .uid("namespace-metrics-kafka-sink")
        .name("kafka: " + config.namespaceMetricsTopic);
    // One metrics sink for all nodes: Namespace rows are batched with the others.
    int historyWindows = config.historyWindows;
    rows.union(namespaces).sinkTo(new Neo4jSink<>(config.neo4j(), s -> new NodeMetricsGraphWriter(s, historyWindows)))
        .uid("metrics-neo4j-sink")
        .name("neo4j: window metrics")
        .setParallelism(1);
    TransactionMetrics.sinkEdges(results.edges(), config);
    return results.deadLetters();
  }

  /** The ResourceSamples topic, decoded, with timestamps and watermarks per partition. */
  static DataStream<DecodedSample> source(StreamExecutionEnvironment env, JobConfig config) {
    // Given to the source, the strategy runs per Kafka partition (split): the source's watermark is
    // the minimum over its partitions, idle partitions excluded.
    return env
        .fromSource(agentTopicSource(config, config.resourcesTopic, "-resources", new ResourceSampleDeserializer()),
            watermarks(config), "kafka: " + config.resourcesTopic)
        .uid("kafka-resource-samples");
  }

  /**
   * A topic the agents write to (one consumer group per topic, resuming where it left off), as
   * the metric windows read it: bounded runs read to the end of a topic made if missing; live ones
   * follow a pattern, since the job may start before any agent created the topic.
   */
  static <T> KafkaSource<T> agentTopicSource(JobConfig config, String topic, String groupSuffix,
      KafkaRecordDeserializationSchema<T> deserializer) {
    KafkaSourceBuilder<T> source = KafkaSource.<T>builder()
        .setBootstrapServers(config.kafkaBrokers)
        .setProperties(KafkaClientProperties.source(config))
        .setGroupId(config.groupId + groupSuffix)
        .setStartingOffsets(OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST))
        .setDeserializer(deserializer);
    if (config.bounded) {
      CorrelationJob.ensureTopic(config, topic);
      source.setTopics(topic).setBounded(OffsetsInitializer.latest());
    } else {
      source.setTopicPattern(Pattern.compile(Pattern.quote(topic)))
          .setProperty("partition.discovery.interval.ms", "10000");
    }
    return source.build();
  }

  /**
   * The window part of the job, from decoded ResourceSamples and TransactionStats (timestamps and
   * watermarks assigned) to results, without sinks: what the job and the benchmark run. {@code tap}
   * applies to the sample window inputs (tests inject failures there).
   */
  public static Results windows(DataStream<DecodedSample> decodedSamples,
      DataStream<DecodedTransaction> decodedTransactions, DataStream<ServiceMappingUpdate> mappings,
      JobConfig config, UnaryOperator<DataStream<MetricInput>> tap) {
    SingleOutputStreamOperator<MetricInput> inputs = decodedSamples
        .process(new SplitResourceSamples())
        .uid("split-resource-samples")
        .name("split resource samples");

    DataStream<MetricInput> samples = tap.apply(inputs);
    // TransactionStats feed the same windows (one state per entity and window holds its CPU seconds
    // and its transactions: Eq. 3.3-3.5 need no join); the PROCESS samples tell their groups.
    TransactionMetrics.Streams transactions = TransactionMetrics.windows(decodedTransactions,
        samples.filter(new IsProcess()).uid("process-samples").name("process samples"), mappings, config);
    // Split on each side, then united: a filter after the union could not chain to either input,
    // so it ran as a task of its own that every input was serialised to twice (once per filter).
    DataStream<MetricInput> entityInputs = samples
        .filter(new IsNamespace(false)).uid("entity-inputs").name("entity inputs")
        .union(transactions.windowInputs
            .filter(new IsNamespace(false)).uid("entity-transaction-inputs").name("entity transaction inputs"));
    DataStream<MetricInput> namespaceInputs = samples
        .filter(new IsNamespace(true)).uid("namespace-inputs").name("namespace inputs")
        .union(transactions.windowInputs
            .filter(new IsNamespace(true)).uid("namespace-transaction-inputs").name("namespace transaction inputs"));
    SingleOutputStreamOperator<MetricsRow> rows = windows(entityInputs, config);
    SingleOutputStreamOperator<MetricsRow> namespaces = namespaceWindows(namespaceInputs, config);
    return new Results(rows, namespaces, transactions.edges,
        inputs.getSideOutput(SplitDeadLetters.DEAD_LETTERS).union(transactions.deadLetters));
  }

  /**
   * Event time = the sample's interval end; bounded out-of-orderness (disorder within a partition:
   * several hosts' clocks and delivery delays), idleness (a partition without records, e.g. its
   * hosts are gone, stops holding the watermark back).
   */
  public static WatermarkStrategy<DecodedSample> watermarks(JobConfig config) {
    // Per host: every agent reports every interval, so a host that goes quiet is gone, and a host
    // whose clock is behind holds the watermark back instead of its samples being late.
    long bound = config.maxOutOfOrdernessMs;
    long idleness = config.idlenessMs;
    PerHostWatermarks.HostOf<DecodedSample> hostOf = d -> d.sample == null ? null : d.sample.hostId;
    return WatermarkStrategy.<DecodedSample>forGenerator(
            ctx -> new PerHostWatermarks<>(hostOf, bound, idleness, ctx.getInputActivityClock()))
        .withTimestampAssigner((d, previous) -> d.eventTimeMs());
  }

  /**
   * Flink's per-partition strategy for any source, given its event time in ms: bounded
   * out-of-orderness and idleness of the partition. For TransactionStats, which a host sends only
   * for connections with traffic in the interval: per host, a host without traffic would hold the
   * watermark back for the whole idleness.
   */
  static <T> WatermarkStrategy<T> watermarks(JobConfig config, EventTime<T> eventTimeMs) {
    return WatermarkStrategy.<T>forBoundedOutOfOrderness(Duration.ofMillis(config.maxOutOfOrdernessMs))
        .withTimestampAssigner((d, previous) -> eventTimeMs.of(d))
        .withIdleness(Duration.ofMillis(config.idlenessMs));
  }

  /** Event time of a decoded source record, ms (serializable: it travels with the job graph). */
  interface EventTime<T> extends java.io.Serializable {
    long of(T record);
  }

  static final class IsProcess implements FilterFunction<MetricInput> {
    private static final long serialVersionUID = 1L;

    @Override
    public boolean filter(MetricInput in) {
      return MetricInput.PROCESS.equals(in.level);
    }
  }

  /** Splits the window inputs: NAMESPACE ones to the namespace windows, the others to the entity windows. */
  static final class IsNamespace implements FilterFunction<MetricInput> {
    private static final long serialVersionUID = 1L;
    private final boolean namespace;

    IsNamespace(boolean namespace) {
      this.namespace = namespace;
    }

    @Override
    public boolean filter(MetricInput in) {
      return in.isNamespace() == namespace;
    }
  }

  /**
   * Per namespace over all hosts (keyed by the namespace alone, so one subtask holds a namespace):
   * the same window size, lateness, revisions and late-input side output as {@link #windows}.
   */
  public static SingleOutputStreamOperator<MetricsRow> namespaceWindows(DataStream<MetricInput> inputs,
      JobConfig config) {
    return inputs
        .keyBy(new ByNamespace())
        .window(TumblingEventTimeWindows.of(Duration.ofMillis(config.windowMs)))
        .allowedLateness(Duration.ofMillis(config.allowedLatenessMs))
        .sideOutputLateData(LATE)
        .aggregate(new NamespaceWindowAggregate(), new NamespaceWindowFunction())
        .uid("namespace-windows")
        .name("namespace windows");
  }

  /** The windows, incremental (AggregateFunction) with a ProcessWindowFunction for the result. */
  public static SingleOutputStreamOperator<MetricsRow> windows(DataStream<MetricInput> inputs, JobConfig config) {
    return inputs
        .keyBy(new ByWindowKey())
        .window(TumblingEventTimeWindows.of(Duration.ofMillis(config.windowMs)))
        // Default event-time trigger: fires at the window end and again for each late element
        // within the lateness, with the whole updated aggregate.
        .allowedLateness(Duration.ofMillis(config.allowedLatenessMs))
        .sideOutputLateData(LATE)
        .aggregate(new EntityWindowAggregate(), new EntityWindowFunction(config.maxHttpRoutes))
        .uid("resource-windows")
        .name("resource windows");
  }

  static KafkaSink<MetricsRow> metricsSink(JobConfig config) {
    return ExactlyOnceKafkaSink.of(config, new WindowMetricsSerializer(config.metricsTopic), "metrics");
  }

  static KafkaSink<MetricsRow> namespaceMetricsSink(JobConfig config) {
    return ExactlyOnceKafkaSink.of(config, new NamespaceMetricsSerializer(config.namespaceMetricsTopic), "namespace-metrics");
  }

  public static final class ByNamespace implements KeySelector<MetricInput, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(MetricInput in) {
      return in.entityId;
    }
  }

  public static final class ByWindowKey implements KeySelector<MetricInput, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(MetricInput in) {
      return in.key();
    }
  }
}
