package io.wattgraph.stream;

import io.wattgraph.stream.connection.ConnectionCorrelator;
import io.wattgraph.stream.connection.ConnectionUpdate;
import io.wattgraph.stream.connection.ConnectionsPerEdge;
import io.wattgraph.stream.connection.EdgeRow;
import io.wattgraph.stream.source.CgroupSample;
import io.wattgraph.stream.source.DeadLetter;
import io.wattgraph.stream.source.Decoded;
import io.wattgraph.stream.source.Sample;
import io.wattgraph.stream.source.Observation;
import io.wattgraph.stream.source.SplitDeadLetters;
import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.transaction.MaskedPeers;
import io.wattgraph.stream.transaction.EdgeMetricsRow;
import io.wattgraph.stream.transaction.EdgeWindowAggregate;
import io.wattgraph.stream.transaction.EdgeWindowFunction;
import io.wattgraph.stream.transaction.ProcessGroups;
import io.wattgraph.stream.transaction.ProcessGroupsOperator;
import io.wattgraph.stream.transaction.TransactionEdges;
import io.wattgraph.stream.vip.AbstractVirtualIpResolver;
import io.wattgraph.stream.vip.ConnectionVirtualIpResolver;
import io.wattgraph.stream.vip.DataTimeBroadcastOperator;
import io.wattgraph.stream.vip.TransactionVirtualIpResolver;
import io.wattgraph.stream.window.CgroupRow;
import io.wattgraph.stream.window.CgroupWindowAggregate;
import io.wattgraph.stream.window.CgroupWindowFunction;
import io.wattgraph.stream.window.EntityWindowAggregate;
import io.wattgraph.stream.window.EntityWindowFunction;
import io.wattgraph.stream.window.MetricInput;
import io.wattgraph.stream.window.MetricsRow;
import io.wattgraph.stream.window.NamespaceWindowAggregate;
import io.wattgraph.stream.window.NamespaceWindowFunction;
import io.wattgraph.stream.window.SplitResourceSamples;
import io.wattgraph.stream.window.WindowEndTrigger;
import java.io.IOException;
import java.time.Duration;
import java.util.function.UnaryOperator;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.execution.RecoveryClaimMode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The whole job, top to bottom as the data flows ({@link #build}): the four Kafka inputs
 * ({@link Sources}); the connection graph (VIPs resolved, both ends of each connection paired,
 * connections summed per edge); the windows (ResourceSamples and TransactionStats per process,
 * group, pod, host and namespace, and TransactionStats per edge); and the outputs ({@link Sinks}).
 * Each step is one operator with a uid that never changes: checkpoints are matched to operators by it.
 */
public final class CorrelationJob {
  private static final Logger LOG = LoggerFactory.getLogger(CorrelationJob.class);

  /** Entity and namespace window inputs that came after their window's end plus the allowed lateness. */
  public static final OutputTag<MetricInput> LATE = new OutputTag<>("late-samples") {};
  /** Edge window inputs that came after their window's end plus the allowed lateness. */
  public static final OutputTag<EdgeInput> LATE_EDGES = new OutputTag<>("late-edge-inputs") {};
  /** Container window inputs (CgroupStats) that came after their window's end plus the allowed lateness. */
  public static final OutputTag<CgroupSample> LATE_CGROUPS = new OutputTag<>("late-cgroup-stats") {};

  /**
   * Combined transaction inputs buffered at most per subtask between watermarks (each a few hundred
   * bytes): a bound on memory. Live, a watermark interval (200 ms) brings at most the combinations
   * of about one agent interval per subtask; replays and benchmarks, many intervals at once.
   */
  static final int COMBINED_INPUTS = 20_000;

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
    Sources sources = new Sources(env, config);
    Sinks sinks = new Sinks(config);

    // Service mappings (VIP:port to backends): broadcast to the VIP resolvers of both paths.
    SingleOutputStreamOperator<ServiceMappingUpdate> mappings = sources.serviceMappings();

    // The connection graph: ConnectionEvents -> VIPs resolved -> ends paired -> totals per edge -> Neo4j.
    SingleOutputStreamOperator<Observation> observations = sources.connectionEvents();
    sinks.connectionGraph(connectionGraph(tap.apply(observations), mappings, config));

    // The windows: ResourceSamples and TransactionStats -> entity, namespace and edge windows.
    Windows windows = windows(sources.resourceSamples(), sources.transactionStats(), mappings, config, metricsTap);
    sinks.entityAndNamespaceWindows(windows.entities(), windows.namespaces());
    sinks.edgeWindows(windows.edges());

    // The container windows: CgroupStats -> per container -> Container nodes.
    SingleOutputStreamOperator<CgroupSample> cgroups = sources.cgroupStats()
        .process(new SplitDeadLetters<>(), TypeInformation.of(CgroupSample.class))
        .uid("split-cgroup-stats")
        .name("split cgroup stats");
    sinks.containerWindows(containerWindows(cgroups, config));

    // What no step can use, from every input: the dead-letter topic.
    sinks.deadLetters(observations.getSideOutput(SplitDeadLetters.DEAD_LETTERS)
        .union(mappings.getSideOutput(SplitDeadLetters.DEAD_LETTERS), windows.deadLetters(),
            cgroups.getSideOutput(SplitDeadLetters.DEAD_LETTERS)));
  }

  /**
   * From valid observations and service mappings to edge rows: resolve virtual IPs, pair both ends
   * of each connection, sum connections per edge. The benchmark runs exactly this.
   */
  public static DataStream<EdgeRow> connectionGraph(DataStream<Observation> observations,
      DataStream<ServiceMappingUpdate> mappings, JobConfig config) {
    // The mappings carry no event time: the correlator's END_OF_INPUT timers fire when the observations end.
    DataStream<Observation> resolved = DataTimeBroadcastOperator.connect(
            observations.keyBy(new ConnectionVirtualIpResolver.ByClientEndpoint()), mappings,
            new ConnectionVirtualIpResolver(config.pairingHorizonMs, config.closedRetention()),
            TypeInformation.of(Observation.class), "resolve virtual IPs", AbstractVirtualIpResolver.BROADCAST_STATES)
        .uid("resolve-virtual-ips");

    DataStream<ConnectionUpdate> connections = resolved
        .keyBy(new ConnectionCorrelator.ByConnection())
        .process(new ConnectionCorrelator(config.pairingHorizonMs, config.closedRetention(), config.idleTimeoutMs,
            config.duplicateHorizonMs, config.sheddingPeerMemoryMs))
        .uid("correlate-connections")
        .name("correlate connections");

    return connections
        .keyBy(new ConnectionsPerEdge.ByEdge())
        .process(new ConnectionsPerEdge())
        .uid("aggregate-edges")
        .name("aggregate edges");
  }

  /** The window results, and the dead letters of both window inputs. */
  public record Windows(SingleOutputStreamOperator<MetricsRow> entities,
      SingleOutputStreamOperator<MetricsRow> namespaces, SingleOutputStreamOperator<EdgeMetricsRow> edges,
      DataStream<DeadLetter> deadLetters) {}

  /**
   * From decoded ResourceSamples and TransactionStats (timestamps and watermarks assigned) to the
   * window results, without sinks: what the job and the benchmark run. {@code tap} applies to the
   * sample window inputs (tests inject failures there).
   */
  public static Windows windows(DataStream<Decoded<Sample>> decodedSamples,
      DataStream<Decoded<Transaction>> decodedTransactions, DataStream<ServiceMappingUpdate> mappings,
      JobConfig config, UnaryOperator<DataStream<MetricInput>> tap) {
    SingleOutputStreamOperator<MetricInput> sampleInputs = decodedSamples
        .process(new SplitResourceSamples())
        .uid("split-resource-samples")
        .name("split resource samples");
    DataStream<MetricInput> samples = tap.apply(sampleInputs);
    DataStream<MetricInput> processSamples = samples.filter(new IsProcess()).uid("process-samples").name("process samples");

    SingleOutputStreamOperator<Transaction> transactions = decodedTransactions
        .process(new SplitDeadLetters<>(), TypeInformation.of(Transaction.class))
        .uid("split-transaction-stats")
        .name("split transaction stats");

    // TransactionStats feed the entity windows too (one state per entity and window holds its CPU
    // seconds and its transactions: the operational analysis needs no join); the PROCESS samples
    // tell their processes' groups.
    DataStream<MetricInput> transactionInputs = transactionWindowInputs(transactions, processSamples, config);
    // Split on each side, then united: a filter after the union could not chain to either input,
    // so it ran as a task of its own that every input was serialised to twice (once per filter).
    DataStream<MetricInput> entityInputs = samples
        .filter(new IsNamespace(false)).uid("entity-inputs").name("entity inputs")
        .union(transactionInputs
            .filter(new IsNamespace(false)).uid("entity-transaction-inputs").name("entity transaction inputs"));
    DataStream<MetricInput> namespaceInputs = samples
        .filter(new IsNamespace(true)).uid("namespace-inputs").name("namespace inputs")
        .union(transactionInputs
            .filter(new IsNamespace(true)).uid("namespace-transaction-inputs").name("namespace transaction inputs"));

    // The edge path's event time is that of the transactions and of the agents' clock, the
    // ResourceSamples' watermarks (as in the entity windows): agents send TransactionStats only for
    // connections with traffic, so alone they would keep a window open until the next request.
    DataStream<Transaction> timed = transactions.union(agentClock(processSamples));
    SingleOutputStreamOperator<EdgeInput> paired = resolveTransactionVips(timed, mappings, config)
        .keyBy(new TransactionEdges.ByConnection())
        .process(new TransactionEdges(config.idleTimeoutMs, config.windowMs, config.allowedLatenessMs))
        .uid("transaction-edges")
        .name("pair transaction ends");
    // An end merged into its client-port-0 record while the other reported on its own.
    DataStream<EdgeInput> edgeInputs = paired.union(paired.getSideOutput(TransactionEdges.UNPAIRED)
        .keyBy(new MaskedPeers.ByMaskedKey())
        .process(new MaskedPeers(config.idleTimeoutMs, config.windowMs, config.allowedLatenessMs))
        .uid("masked-peers")
        .name("pair ends across client port masking"));

    return new Windows(entityWindows(entityInputs, config), namespaceWindows(namespaceInputs, config),
        edgeWindows(edgeInputs, config),
        sampleInputs.getSideOutput(SplitDeadLetters.DEAD_LETTERS)
            .union(transactions.getSideOutput(SplitDeadLetters.DEAD_LETTERS)));
  }

  /**
   * Each TransactionStats record as window inputs of its process, group, pod, namespace and host,
   * joined with the process -> group mapping the PROCESS samples teach, combined before the shuffle.
   */
  static DataStream<MetricInput> transactionWindowInputs(DataStream<Transaction> transactions,
      DataStream<MetricInput> processSamples, JobConfig config) {
    return processSamples
        .keyBy(new ProcessGroups.ByEntity())
        .connect(transactions.keyBy(new ProcessGroups.ByProcess()))
        .transform("process groups of transactions", TypeInformation.of(MetricInput.class),
            new ProcessGroupsOperator(new ProcessGroups(config.idleTimeoutMs, config.windowMs, config.allowedLatenessMs),
                config.windowMs, COMBINED_INPUTS))
        .uid("process-groups");
  }

  /** The samples' watermarks and idleness, without their records, as a transaction stream. */
  static DataStream<Transaction> agentClock(DataStream<MetricInput> samples) {
    return samples
        .process(new WatermarksOnly<MetricInput, Transaction>(), TypeInformation.of(Transaction.class))
        .uid("agent-clock")
        .name("agents' clock");
  }

  /**
   * Client records towards a Service VIP rewritten to the backend that served them, keyed by the
   * client endpoint (as on the connection path), so that both ends of a connection through a VIP
   * share their connection key in {@link TransactionEdges}. The mappings have no event time: the
   * operator's watermark is that of {@code transactions} alone ({@link DataTimeBroadcastOperator}).
   */
  static DataStream<Transaction> resolveTransactionVips(DataStream<Transaction> transactions,
      DataStream<ServiceMappingUpdate> mappings, JobConfig config) {
    // A backend's report resolves its client endpoint's records for the connection path's retention,
    // and at least a window plus the out-of-orderness (how much later, live, the client's record of
    // the same interval can still arrive in time for its window).
    long retentionMs = Math.max(config.closedRetention(), config.windowMs + config.maxOutOfOrdernessMs);
    return DataTimeBroadcastOperator.connect(transactions.keyBy(new TransactionVirtualIpResolver.ByClientEndpoint()),
            mappings, new TransactionVirtualIpResolver(retentionMs, config.windowMs),
            TypeInformation.of(Transaction.class), "resolve virtual IPs of transactions",
            AbstractVirtualIpResolver.BROADCAST_STATES)
        .uid("resolve-transaction-vips");
  }

  /**
   * Per process, group, pod and host (keyed {@code LEVEL|hostId|entityId}): tumbling event-time
   * windows, incremental (an AggregateFunction: no input is buffered) with a ProcessWindowFunction
   * for the result. Event-time trigger ({@link WindowEndTrigger}): fires at the window end and again for
   * each late input within the lateness, with the whole updated aggregate; later inputs go to {@link #LATE}.
   */
  public static SingleOutputStreamOperator<MetricsRow> entityWindows(DataStream<MetricInput> inputs, JobConfig config) {
    return tumbling(inputs, new EntityWindowAggregate.ByWindowKey(), LATE, new EntityWindowAggregate(),
        new EntityWindowFunction(config.maxHttpRoutes), config)
        .uid("resource-windows")
        .name("resource windows");
  }

  /** Per namespace over all hosts: the entity windows' size, lateness, revisions and late output. */
  public static SingleOutputStreamOperator<MetricsRow> namespaceWindows(DataStream<MetricInput> inputs,
      JobConfig config) {
    return tumbling(inputs, new NamespaceWindowAggregate.ByNamespace(), LATE, new NamespaceWindowAggregate(),
        new NamespaceWindowFunction(), config)
        .uid("namespace-windows")
        .name("namespace windows");
  }

  /** Per edge (client process to server process): the entity windows' size, lateness and revisions. */
  public static SingleOutputStreamOperator<EdgeMetricsRow> edgeWindows(DataStream<EdgeInput> inputs, JobConfig config) {
    return tumbling(inputs, new EdgeWindowAggregate.ByEdge(), LATE_EDGES, new EdgeWindowAggregate(),
        new EdgeWindowFunction(), config)
        .uid("edge-windows")
        .name("edge windows");
  }

  /**
   * Per container (keyed {@code hostId|containerId}): the agents' CgroupStats in the entity windows'
   * size, lateness, revisions and triggers; later inputs to {@link #LATE_CGROUPS}.
   */
  public static SingleOutputStreamOperator<CgroupRow> containerWindows(DataStream<CgroupSample> inputs,
      JobConfig config) {
    return tumbling(inputs, new CgroupWindowAggregate.ByContainer(), LATE_CGROUPS, new CgroupWindowAggregate(),
        new CgroupWindowFunction(), config)
        .uid("container-windows")
        .name("container windows");
  }

  /**
   * Tumbling event-time windows of {@code --window-ms} with the allowed lateness (how far an agent may
   * lag the others: docs/architecture.md); later inputs to {@code late}.
   */
  private static <I, A, R> SingleOutputStreamOperator<R> tumbling(DataStream<I> inputs, KeySelector<I, String> key,
      OutputTag<I> late, AggregateFunction<I, A, A> aggregate, ProcessWindowFunction<A, R, String, TimeWindow> result,
      JobConfig config) {
    return inputs
        .keyBy(key)
        .window(TumblingEventTimeWindows.of(Duration.ofMillis(config.windowMs)))
        .trigger(new WindowEndTrigger(config.allowedLatenessMs))
        .allowedLateness(Duration.ofMillis(config.allowedLatenessMs))
        .sideOutputLateData(late)
        .aggregate(aggregate, result);
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
    env.getCheckpointConfig().setCheckpointTimeout(config.checkpointTimeout());
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

  /** Passes on no record: what remains are the watermarks and watermark statuses of its input. */
  static final class WatermarksOnly<I, O> extends ProcessFunction<I, O> {
    private static final long serialVersionUID = 1L;

    @Override
    public void processElement(I in, Context ctx, Collector<O> out) {}
  }

  /** The PROCESS samples, which tell a process's group, pod and namespace. */
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
}
