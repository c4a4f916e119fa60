package io.wattgraph.stream;

import io.wattgraph.stream.sink.kafka.EdgeMetricsSerializer;
import io.wattgraph.stream.sink.kafka.ExactlyOnceKafkaSink;
import io.wattgraph.stream.sink.neo4j.EdgeMetricsGraphWriter;
import io.wattgraph.stream.sink.neo4j.Neo4jSink;
import io.wattgraph.stream.source.DeadLetter;
import io.wattgraph.stream.source.DecodedTransaction;
import io.wattgraph.stream.source.Endpoints;
import io.wattgraph.stream.source.SplitDeadLetters;
import io.wattgraph.stream.source.TransactionStatsDeserializer;
import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.transaction.EdgeMetricsRow;
import io.wattgraph.stream.transaction.EdgeWindowAggregate;
import io.wattgraph.stream.transaction.EdgeWindowFunction;
import io.wattgraph.stream.transaction.ProcessGroups;
import io.wattgraph.stream.transaction.ProcessGroupsOperator;
import io.wattgraph.stream.transaction.TransactionEdges;
import io.wattgraph.stream.vip.AbstractVirtualIpResolver;
import io.wattgraph.stream.vip.DataTimeBroadcastOperator;
import io.wattgraph.stream.vip.TransactionVirtualIpResolver;
import io.wattgraph.stream.window.LateSampleCounter;
import io.wattgraph.stream.window.MetricInput;
import java.time.Duration;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Request/response metrics from the agents' TransactionStats (issue 5 items 5-6): the source, the
 * per-entity window inputs (joined with the process -> group mapping of the ResourceSamples, then
 * windowed together with the ResourceSamples in {@link ResourceMetrics#windows}), and the per-edge
 * windows with their own Kafka topic and Neo4j sink.
 */
public final class TransactionMetrics {
  private TransactionMetrics() {}

  /** Edge window inputs that came after their window's end plus the allowed lateness. */
  public static final OutputTag<EdgeInput> LATE_EDGES = new OutputTag<>("late-edge-inputs") {};

  /** What the entity windows, the edge sinks and the shared DLQ sink get from here. */
  static final class Streams {
    final DataStream<MetricInput> windowInputs;
    final SingleOutputStreamOperator<EdgeMetricsRow> edges;
    final DataStream<DeadLetter> deadLetters;

    Streams(DataStream<MetricInput> windowInputs, SingleOutputStreamOperator<EdgeMetricsRow> edges,
        DataStream<DeadLetter> deadLetters) {
      this.windowInputs = windowInputs;
      this.edges = edges;
      this.deadLetters = deadLetters;
    }
  }

  /**
   * The TransactionStats topic, decoded, with the same event-time settings as the ResourceSamples
   * (per partition, out-of-orderness, idleness).
   */
  static DataStream<DecodedTransaction> source(StreamExecutionEnvironment env, JobConfig config) {
    return env
        .fromSource(ResourceMetrics.agentTopicSource(config, config.transactionsTopic, "-transactions",
                new TransactionStatsDeserializer()), watermarks(config), "kafka: " + config.transactionsTopic)
        .uid("kafka-transaction-stats");
  }

  /** The ResourceSamples' event-time strategy, on the records' interval ends. */
  public static WatermarkStrategy<DecodedTransaction> watermarks(JobConfig config) {
    return ResourceMetrics.watermarks(config, DecodedTransaction::eventTimeMs);
  }

  /**
   * Combined transaction inputs buffered at most per subtask between watermarks (each a few hundred
   * bytes): a bound on memory. Live, a watermark interval (200 ms) brings at most the combinations
   * of about one agent interval per subtask; replays and benchmarks, many intervals at once.
   */
  static final int COMBINED_INPUTS = 20_000;

  /**
   * From decoded records (timestamps and watermarks assigned) to the per-entity window inputs
   * (joined with the process -> group mapping fed by {@code processSamples}, the PROCESS window
   * inputs of the ResourceSamples), the VIP resolution (the connection path's service
   * {@code mappings}) and the per-edge windows. Sinks are the caller's.
   */
  static Streams windows(DataStream<DecodedTransaction> decoded, DataStream<MetricInput> processSamples,
      DataStream<ServiceMappingUpdate> mappings, JobConfig config) {
    SingleOutputStreamOperator<Transaction> transactions = decoded
        .process(new SplitDeadLetters<>(), TypeInformation.of(Transaction.class))
        .uid("split-transaction-stats")
        .name("split transaction stats");

    DataStream<MetricInput> windowInputs = processSamples
        .keyBy(new ByEntity())
        .connect(transactions.keyBy(new ByProcess()))
        .transform("process groups of transactions", TypeInformation.of(MetricInput.class),
            new ProcessGroupsOperator(new ProcessGroups(config.idleTimeoutMs, config.windowMs, config.allowedLatenessMs), config.windowMs,
                COMBINED_INPUTS))
        .uid("process-groups");

    // The edge path's event time is that of the transactions and of the agents' clock, the
    // ResourceSamples' watermarks (as in the entity windows): agents send TransactionStats only for
    // connections with traffic, so alone they would keep a window open until the next request.
    DataStream<Transaction> timed = transactions.union(agentClock(processSamples));
    SingleOutputStreamOperator<EdgeMetricsRow> edges = edgeWindows(resolveVirtualIps(timed, mappings, config)
        .keyBy(new ByConnection())
        .process(new TransactionEdges(config.idleTimeoutMs, config.windowMs, config.allowedLatenessMs))
        .uid("transaction-edges")
        .name("pair transaction ends"), config);
    return new Streams(windowInputs, edges, transactions.getSideOutput(SplitDeadLetters.DEAD_LETTERS));
  }

  /** The samples' watermarks and idleness, without their records, as a transaction stream. */
  static DataStream<Transaction> agentClock(DataStream<MetricInput> samples) {
    return samples
        .process(new WatermarksOnly<MetricInput, Transaction>(), TypeInformation.of(Transaction.class))
        .uid("agent-clock")
        .name("agents' clock");
  }

  /** Passes on no record: what remains are the watermarks and watermark statuses of its input. */
  static final class WatermarksOnly<I, O> extends ProcessFunction<I, O> {
    private static final long serialVersionUID = 1L;

    @Override
    public void processElement(I in, Context ctx, Collector<O> out) {}
  }

  /** The edge windows' sinks: late inputs counted, results to their Kafka topic and onto the graph. */
  static void sinkEdges(SingleOutputStreamOperator<EdgeMetricsRow> edges, JobConfig config) {
    edges.getSideOutput(LATE_EDGES)
        .sinkTo(LateSampleCounter.edgeInputs())
        .uid("late-edge-inputs")
        .name("count late edge inputs");
    edges.sinkTo(edgeMetricsSink(config))
        .uid("edge-metrics-kafka-sink")
        .name("kafka: " + config.edgeMetricsTopic);
    edges.sinkTo(new Neo4jSink<>(config.neo4j(), EdgeMetricsGraphWriter::new))
        .uid("edge-metrics-neo4j-sink")
        .name("neo4j: edge metrics")
        .setParallelism(1);
  }

  /**
   * Client records towards a Service VIP rewritten to the backend that served them, keyed by the
   * client endpoint (as the connection path's {@code ConnectionVirtualIpResolver}), so that both ends of a
   * connection through a VIP share their connection key in {@link TransactionEdges}. The mappings
   * have no event time: the operator's watermark is that of {@code transactions} alone
   * ({@link DataTimeBroadcastOperator}).
   */
  static DataStream<Transaction> resolveVirtualIps(DataStream<Transaction> transactions,
      DataStream<ServiceMappingUpdate> mappings, JobConfig config) {
    return DataTimeBroadcastOperator.connect(transactions.keyBy(new ByClientEndpoint()), mappings,
            new TransactionVirtualIpResolver(vipRetentionMs(config), config.windowMs),
            TypeInformation.of(Transaction.class), "resolve virtual IPs of transactions",
            AbstractVirtualIpResolver.BROADCAST_STATES)
        .uid("resolve-transaction-vips");
  }

  /**
   * How long a backend's report resolves its client endpoint's records: the connection path's
   * retention, and at least a window plus the out-of-orderness (how much later, live, the client's
   * record of the same interval can still arrive in time for its window).
   */
  static long vipRetentionMs(JobConfig config) {
    return Math.max(config.closedRetention(), config.windowMs + config.maxOutOfOrdernessMs);
  }

  /** Edge windows: the same size, lateness and revisions as the entity windows. */
  public static SingleOutputStreamOperator<EdgeMetricsRow> edgeWindows(DataStream<EdgeInput> inputs, JobConfig config) {
    return inputs
        .keyBy(new ByEdge())
        .window(TumblingEventTimeWindows.of(Duration.ofMillis(config.windowMs)))
        .allowedLateness(Duration.ofMillis(config.allowedLatenessMs))
        .sideOutputLateData(LATE_EDGES)
        .aggregate(new EdgeWindowAggregate(), new EdgeWindowFunction())
        .uid("edge-windows")
        .name("edge windows");
  }

  static KafkaSink<EdgeMetricsRow> edgeMetricsSink(JobConfig config) {
    return ExactlyOnceKafkaSink.of(config, new EdgeMetricsSerializer(config.edgeMetricsTopic), "edge-metrics");
  }

  public static final class ByEntity implements KeySelector<MetricInput, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(MetricInput in) {
      return in.entityId;
    }
  }

  public static final class ByProcess implements KeySelector<Transaction, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Transaction t) {
      return t.processId();
    }
  }

  /** As {@link CorrelationJob.ByClientEndpoint}: the endpoint both ends of a VIP connection report. */
  public static final class ByClientEndpoint implements KeySelector<Transaction, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Transaction t) {
      return t.isClient() ? Endpoints.of(t.localIp, t.localPort) : Endpoints.of(t.remoteIp, t.remotePort);
    }
  }

  public static final class ByConnection implements KeySelector<Transaction, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Transaction t) {
      return t.connectionKey();
    }
  }

  static final class ByEdge implements KeySelector<EdgeInput, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(EdgeInput in) {
      return in.key();
    }
  }
}
