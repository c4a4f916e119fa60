package io.wattgraph.stream;

import io.wattgraph.stream.connection.ConnectionCorrelator;
import io.wattgraph.stream.sink.neo4j.Neo4jSettings;
import java.io.Serializable;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Settings of the correlation job, from command-line flags ({@link #parse}) or built by tests. */
public class JobConfig implements Serializable {
  private static final long serialVersionUID = 1L;

  /**
   * One command-line option: its flag, the field of this class it sets, the form of its value, its
   * default ("required", "none", or the value {@link #parse} takes when the flag is left out) and
   * what it does. The usage text is made from these, and the README's options table is checked
   * against them (JobConfigTest).
   */
  public record Option(String flag, String field, String value, String byDefault, String meaning) {}

  public static final List<Option> OPTIONS = List.of(
      new Option("--kafka-brokers", "kafkaBrokers", "HOST:PORT[,HOST:PORT...]", "required", "Kafka bootstrap servers"),
      new Option("--neo4j-uri", "neo4jUri", "bolt://HOST:PORT", "required", "Neo4j (bolt:// or neo4j://, +s/+ssc for TLS)"),
      new Option("--kafka-properties", "kafkaProperties", "FILE", "none",
          "Kafka client properties (TLS, SASL) for every source, sink and admin client"),
      new Option("--neo4j-user", "neo4jUser", "USER", "none", "Neo4j user; with --neo4j-password, none: no auth"),
      new Option("--neo4j-password", "neo4jPassword", "PASSWORD", "none", "Neo4j password"),
      new Option("--group-id", "groupId", "ID", "wattgraph-correlation",
          "consumer group prefix, and prefix of the sinks' transactional ids"),
      new Option("--topic", "topic", "TOPIC", "wattgraph.connections", "ConnectionEvents (in)"),
      new Option("--service-mappings-topic", "serviceMappingsTopic", "TOPIC", "wattgraph.service-mappings",
          "ServiceMappings, compacted (in)"),
      new Option("--resources-topic", "resourcesTopic", "TOPIC", "wattgraph.resources", "ResourceSamples (in)"),
      new Option("--transactions-topic", "transactionsTopic", "TOPIC", "wattgraph.transactions", "TransactionStats (in)"),
      new Option("--cgroups-topic", "cgroupsTopic", "TOPIC", "wattgraph.cgroups", "CgroupStats (in)"),
      new Option("--metrics-topic", "metricsTopic", "TOPIC", "wattgraph.metrics", "WindowMetrics (out)"),
      new Option("--edge-metrics-topic", "edgeMetricsTopic", "TOPIC", "wattgraph.edge-metrics", "EdgeMetrics (out)"),
      new Option("--namespace-metrics-topic", "namespaceMetricsTopic", "TOPIC", "wattgraph.namespace-metrics",
          "NamespaceMetrics (out)"),
      new Option("--dlq-topic", "dlqTopic", "TOPIC", "wattgraph.dlq", "dead letters of every input (out)"),
      new Option("--pairing-horizon-ms", "pairingHorizonMs", "MS", "3000",
          "how long a lone connection end waits for its peer before it goes on an edge"),
      new Option("--closed-retention-ms", "closedRetentionMs", "MS", "2 x --pairing-horizon-ms",
          "how long a closed connection is kept whole for a straggling event"),
      new Option("--idle-timeout-ms", "idleTimeoutMs", "MS", "3600000",
          "a connection, process or transaction peer silent this long is folded into its totals and forgotten"),
      new Option("--duplicate-horizon-ms", "duplicateHorizonMs", "MS", "300000",
          "memory of closed connections: replays dropped, a lone end's late peer pairs; 0: off"),
      new Option("--shedding-peer-memory-ms", "sheddingPeerMemoryMs", "MS", "600000",
          "how long a host counts as shedding; 0: lone ends towards shedding hosts become External"),
      new Option("--window-ms", "windowMs", "MS", "10000", "size of the tumbling event-time windows"),
      new Option("--allowed-lateness-ms", "allowedLatenessMs", "MS", "300000",
          "late inputs within this revise a window: how far an agent may lag the others (a Kafka outage)"),
      new Option("--max-out-of-orderness-ms", "maxOutOfOrdernessMs", "MS", "5000",
          "watermark = highest event time of a host (or partition) minus this"),
      new Option("--idleness-ms", "idlenessMs", "MS", "15000", "a host or partition silent this long stops holding time back"),
      new Option("--max-http-routes", "maxHttpRoutes", "N", "100", "HTTP routes per entity window and role, 1..10000"),
      new Option("--history-windows", "historyWindows", "N", "360", "windows kept per graph node, 0..8640; 0: latest only"),
      new Option("--edge-wait-ms", "edgeWaitMs", "MS", "60000",
          "an edge window that reaches the graph before its edge is offered again this long, then dropped and counted"),
      new Option("--sink-batch-size", "sinkBatchSize", "N", "2000", "rows per Neo4j transaction, 1..50000"),
      new Option("--neo4j-writes", "neo4jWritesCheckpointed", "checkpointed|immediate", "checkpointed",
          "checkpointed: a row reaches Neo4j once the checkpoint after it completed (the graph is what the job's "
              + "state holds, after a failover too; it lags by up to a checkpoint interval); immediate: within "
              + "the sink's flush interval (200 ms), but a failover can leave rows its replay does not write again"),
      new Option("--checkpoint-interval-ms", "checkpointIntervalMs", "MS", "5000", "exactly-once checkpoints this often"),
      new Option("--checkpoint-timeout-ms", "checkpointTimeoutMs", "MS", "0.5 x transaction.timeout.ms",
          "a checkpoint not complete by then fails and the job restarts from the last one; with the interval, "
              + "below the Kafka sinks' transaction.timeout.ms (600000, or --kafka-properties')"),
      new Option("--checkpoint-dir", "checkpointDir", "URI", "none",
          "where checkpoints are kept across runs (none: the job manager's memory)"),
      new Option("--restore", "restore", "latest|none|URI", "latest",
          "state to start from: the newest checkpoint under --checkpoint-dir, none, or a checkpoint or savepoint"),
      new Option("--parallelism", "parallelism", "N", "the environment's", "parallelism of every operator but the sinks"));

  public static final String USAGE = usage();

  private static String usage() {
    StringBuilder b = new StringBuilder("usage: correlation-job --kafka-brokers HOST:PORT[,HOST:PORT...] "
        + "--neo4j-uri bolt://HOST:PORT [OPTION VALUE]...\n");
    for (Option o : OPTIONS) {
      String left = "  " + o.flag() + " " + o.value();
      b.append(String.format("%-46s %s%s\n", left, o.meaning(),
          o.byDefault().equals("required") ? " (required)" : " (default: " + o.byDefault() + ")"));
    }
    return b.toString().stripTrailing();
  }

  public static final String RESTORE_LATEST = "latest";
  public static final String RESTORE_NONE = "none";

  /** Default of {@code --max-http-routes}. */
  public static final int DEFAULT_MAX_HTTP_ROUTES = 100;

  private static final List<String> FLAGS = OPTIONS.stream().map(Option::flag).toList();

  public String kafkaBrokers;
  /** Kafka client properties of every source, sink and admin client ({@link KafkaClientProperties}). */
  public TreeMap<String, String> kafkaProperties = new TreeMap<>();
  public String topic = "wattgraph.connections";
  public String groupId = "wattgraph-correlation";
  public String neo4jUri;
  public String neo4jUser;
  public String neo4jPassword;
  public long pairingHorizonMs = 3000;
  public long checkpointIntervalMs = 5000;
  /**
   * A checkpoint still pending after this fails (and the job restarts from the last complete one);
   * 0: half the sinks' transaction timeout. With the interval it stays below that timeout: a
   * transaction the broker aborted for its age before its checkpoint completed would be lost at the
   * commit.
   */
  public long checkpointTimeoutMs = 0;
  /** The exactly-once Kafka sinks' {@code transaction.timeout.ms} unless --kafka-properties lowers it. */
  public static final long TRANSACTION_TIMEOUT_MS = 600_000;
  /** null: Flink's default checkpoint storage (the job manager's memory). */
  public String checkpointDir;
  /**
   * State to start from: {@code latest} = the newest complete checkpoint under {@link #checkpointDir}
   * of any earlier run (none there, or no directory: empty state), {@code none} = empty state, or the
   * URI of a checkpoint or savepoint.
   */
  public String restore = RESTORE_LATEST;
  /** null: the environment's default parallelism. */
  public Integer parallelism;
  /** Undecodable or invalid source records go here (original bytes, reason and origin in headers). */
  public String dlqTopic = "wattgraph.dlq";
  /** Compacted topic of Kubernetes Service VIP:port to backend mappings (ServiceMapping records). */
  public String serviceMappingsTopic = "wattgraph.service-mappings";
  /** How long a closed connection is remembered (a straggling peer event still finds it); 0: 2 x horizon. */
  public long closedRetentionMs = 0;
  /** A connection with no event for this long is folded into its edge's totals and forgotten. */
  public long idleTimeoutMs = 3_600_000;
  /**
   * The memory of closed connections after the closed retention, in processing time and in the
   * input's event-time progress: a finished connection's sockets (an agent's replay of their events is
   * dropped instead of counted again) and a lone end whole (its late peer still pairs); 0: off.
   */
  public long duplicateHorizonMs = 300_000;
  /**
   * How long a host counts as shedding (load shedding) after its last sampled connection event: a
   * connection only one end reported, towards such a host, is not made an External edge; 0: off.
   */
  public long sheddingPeerMemoryMs = ConnectionCorrelator.DEFAULT_SHEDDING_PEER_MEMORY_MS;
  /** Agents' ResourceSamples (keyed by host id). */
  public String resourcesTopic = "wattgraph.resources";
  /** Window results (WindowMetrics), written transactionally. */
  public String metricsTopic = "wattgraph.metrics";
  /** Agents' TransactionStats (keyed by connection). */
  public String transactionsTopic = "wattgraph.transactions";
  /** Agents' CgroupStats (keyed by host id). */
  public String cgroupsTopic = "wattgraph.cgroups";
  /** Edge window results (EdgeMetrics), written transactionally. */
  public String edgeMetricsTopic = "wattgraph.edge-metrics";
  /** Namespace window results (NamespaceMetrics), written transactionally. */
  public String namespaceMetricsTopic = "wattgraph.namespace-metrics";
  /** Size of the event-time tumbling windows. */
  public long windowMs = 10_000;
  /**
   * An input this late (after its window's end, by the watermark) still updates the window's result:
   * the horizon for an agent behind the others, as after a Kafka outage (the agent back first moves
   * event time to the present); the same as the connection path's {@link #duplicateHorizonMs}.
   */
  public long allowedLatenessMs = 300_000;
  /** Watermark = highest event time seen on a partition minus this. */
  public long maxOutOfOrdernessMs = 5_000;
  /** A partition without records for this long stops holding the watermark back. */
  public long idlenessMs = 15_000;
  /** Stop at the offsets that are latest when the job starts (backfills, tests); not a CLI flag. */
  public boolean bounded;
  /** Rows per Neo4j transaction: 2,000 gave 2.8x the creates/s of 500 (docs/benchmarks/stream-jobs.md). */
  public int sinkBatchSize = 2000;
  public long sinkFlushIntervalMs = 200;
  /** Rows reach Neo4j once the checkpoint after them completed (--neo4j-writes checkpointed). */
  public boolean neo4jWritesCheckpointed = true;
  /** How long an edge window waits in the sink for its edge ({@link Neo4jSettings#waitMs}). */
  public long edgeWaitMs = Neo4jSettings.DEFAULT_WAIT_MS;
  /** Driver-level retry time per Neo4j transaction; after it the sink retries on its own, forever. */
  public long neo4jDriverRetryMs = 30_000;
  /** HTTP routes per entity window and role; the ones with the fewest transactions fold into OTHER *. */
  public int maxHttpRoutes = DEFAULT_MAX_HTTP_ROUTES;
  /** Windows of history per graph node (1 h of 10 s windows); 0: the latest window only. */
  public int historyWindows = 360;

  /** The exactly-once sinks' transaction timeout: --kafka-properties' transaction.timeout.ms, else the job's. */
  public long transactionTimeoutMs() {
    String v = kafkaProperties.get("transaction.timeout.ms");
    return v == null ? TRANSACTION_TIMEOUT_MS : Long.parseLong(v.trim());
  }

  /** --checkpoint-timeout-ms, or half the sinks' transaction timeout. */
  public long checkpointTimeout() {
    return checkpointTimeoutMs > 0 ? checkpointTimeoutMs : transactionTimeoutMs() / 2;
  }

  /** The most windows whose latency histograms the graph keeps per node and edge (as --history-windows). */
  public static final int MAX_LATENCY_SHARE_WINDOWS = 8640;

  /**
   * Windows whose latency histograms the graph keeps per node and edge, so that a revision replaces its
   * window's share of the totals (NodeWindows.latencyTotals): the window, and every newer one written before
   * a revision of it can still come: the lateness, plus a checkpoint interval (a restart revises from the last
   * checkpoint, while the graph may hold windows written after it). Older revisions are counted
   * ({@code latencyRevisionsPastShares}), not added.
   */
  public int latencyShareWindows() {
    long windows = (allowedLatenessMs + checkpointIntervalMs + windowMs - 1) / windowMs + 1;
    return (int) Math.min(MAX_LATENCY_SHARE_WINDOWS, windows);
  }

  public long closedRetention() {
    return closedRetentionMs > 0 ? closedRetentionMs : 2 * pairingHorizonMs;
  }

  public Neo4jSettings neo4j() {
    return new Neo4jSettings(neo4jUri, neo4jUser, neo4jPassword, sinkBatchSize, sinkFlushIntervalMs,
        neo4jDriverRetryMs, edgeWaitMs, neo4jWritesCheckpointed);
  }

  /** Parses {@code --flag value} pairs; an IllegalArgumentException names the offending flag. */
  public static JobConfig parse(String[] args) {
    Map<String, String> flags = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (!FLAGS.contains(flag)) {
        throw new IllegalArgumentException("unknown flag '" + flag + "'");
      }
      if (i + 1 >= args.length || args[i + 1].startsWith("--")) {
        throw new IllegalArgumentException(flag + " needs a value");
      }
      if (flags.put(flag, args[++i]) != null) {
        throw new IllegalArgumentException(flag + " given twice");
      }
    }
    JobConfig c = new JobConfig();
    c.kafkaBrokers = required(flags, "--kafka-brokers");
    if (flags.containsKey("--kafka-properties")) {
      c.kafkaProperties = KafkaClientProperties.load(flags.get("--kafka-properties"));
    }
    c.neo4jUri = required(flags, "--neo4j-uri");
    if (!c.neo4jUri.matches("(bolt|neo4j)(\\+s|\\+ssc)?://.+")) {
      throw new IllegalArgumentException("--neo4j-uri must be a bolt:// or neo4j:// URI, got '" + c.neo4jUri + "'");
    }
    c.topic = text(flags, "--topic", c.topic);
    c.groupId = text(flags, "--group-id", c.groupId);
    c.neo4jUser = flags.get("--neo4j-user");
    c.neo4jPassword = flags.get("--neo4j-password");
    if ((c.neo4jUser == null) != (c.neo4jPassword == null)) {
      throw new IllegalArgumentException("--neo4j-user and --neo4j-password go together (give both or neither)");
    }
    c.pairingHorizonMs = positive(flags, "--pairing-horizon-ms", c.pairingHorizonMs);
    c.edgeWaitMs = nonNegative(flags, "--edge-wait-ms", c.edgeWaitMs);
    c.checkpointIntervalMs = positive(flags, "--checkpoint-interval-ms", c.checkpointIntervalMs);
    c.checkpointTimeoutMs = positive(flags, "--checkpoint-timeout-ms", c.checkpointTimeoutMs);
    long transactions = c.transactionTimeoutMs();
    if (c.checkpointIntervalMs + c.checkpointTimeout() >= transactions) {
      throw new IllegalArgumentException("--checkpoint-interval-ms + --checkpoint-timeout-ms (" + c.checkpointIntervalMs
          + " + " + c.checkpointTimeout() + ") must be below the Kafka sinks' transaction.timeout.ms (" + transactions
          + "): a transaction older than that is aborted by the broker, and its checkpoint's records with it");
    }
    c.checkpointDir = flags.get("--checkpoint-dir");
    c.restore = text(flags, "--restore", c.restore);
    c.dlqTopic = text(flags, "--dlq-topic", c.dlqTopic);
    c.serviceMappingsTopic = text(flags, "--service-mappings-topic", c.serviceMappingsTopic);
    c.closedRetentionMs = positive(flags, "--closed-retention-ms", c.closedRetentionMs);
    c.idleTimeoutMs = positive(flags, "--idle-timeout-ms", c.idleTimeoutMs);
    c.duplicateHorizonMs = nonNegative(flags, "--duplicate-horizon-ms", c.duplicateHorizonMs);
    c.sheddingPeerMemoryMs = nonNegative(flags, "--shedding-peer-memory-ms", c.sheddingPeerMemoryMs);
    c.resourcesTopic = text(flags, "--resources-topic", c.resourcesTopic);
    c.metricsTopic = text(flags, "--metrics-topic", c.metricsTopic);
    c.transactionsTopic = text(flags, "--transactions-topic", c.transactionsTopic);
    c.cgroupsTopic = text(flags, "--cgroups-topic", c.cgroupsTopic);
    c.edgeMetricsTopic = text(flags, "--edge-metrics-topic", c.edgeMetricsTopic);
    c.namespaceMetricsTopic = text(flags, "--namespace-metrics-topic", c.namespaceMetricsTopic);
    c.windowMs = positive(flags, "--window-ms", c.windowMs);
    c.allowedLatenessMs = nonNegative(flags, "--allowed-lateness-ms", c.allowedLatenessMs);
    c.maxOutOfOrdernessMs = nonNegative(flags, "--max-out-of-orderness-ms", c.maxOutOfOrdernessMs);
    c.idlenessMs = positive(flags, "--idleness-ms", c.idlenessMs);
    String[][] topics = {{"--resources-topic", c.resourcesTopic}, {"--metrics-topic", c.metricsTopic},
        {"--dlq-topic", c.dlqTopic}, {"--topic", c.topic}, {"--transactions-topic", c.transactionsTopic},
        {"--cgroups-topic", c.cgroupsTopic}, {"--edge-metrics-topic", c.edgeMetricsTopic},
        {"--namespace-metrics-topic", c.namespaceMetricsTopic}};
    for (String[] same : topics) {
      for (String[] other : topics) {
        if (!same[0].equals(other[0]) && same[1].equals(other[1])) {
          throw new IllegalArgumentException(same[0] + " and " + other[0] + " must name different topics, both are '"
              + same[1] + "'");
        }
      }
    }
    String writes = text(flags, "--neo4j-writes", "checkpointed");
    if (!writes.equals("checkpointed") && !writes.equals("immediate")) {
      throw new IllegalArgumentException("--neo4j-writes must be checkpointed or immediate, got '" + writes + "'");
    }
    c.neo4jWritesCheckpointed = writes.equals("checkpointed");
    long batch = positive(flags, "--sink-batch-size", c.sinkBatchSize);
    if (batch > 50_000) {
      throw new IllegalArgumentException("--sink-batch-size must be at most 50000, got " + batch);
    }
    c.sinkBatchSize = (int) batch;
    long routes = positive(flags, "--max-http-routes", c.maxHttpRoutes);
    if (routes > 10_000) {
      // Each route is a list element on the entity's graph node and a record in WindowMetrics.
      throw new IllegalArgumentException("--max-http-routes must be at most 10000, got " + routes);
    }
    c.maxHttpRoutes = (int) routes;
    long history = nonNegative(flags, "--history-windows", c.historyWindows);
    if (history > 8640) {
      // Five list properties of N entries per node, rewritten at every window.
      throw new IllegalArgumentException("--history-windows must be at most 8640, got " + history);
    }
    c.historyWindows = (int) history;
    if (flags.containsKey("--parallelism")) {
      c.parallelism = (int) positive(flags, "--parallelism", 1);
    }
    return c;
  }

  private static String required(Map<String, String> flags, String flag) {
    String v = flags.get(flag);
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException("missing required flag " + flag);
    }
    return v;
  }

  private static String text(Map<String, String> flags, String flag, String dflt) {
    String v = flags.getOrDefault(flag, dflt);
    if (v.isBlank()) {
      throw new IllegalArgumentException(flag + " must not be empty");
    }
    return v;
  }

  private static long nonNegative(Map<String, String> flags, String flag, long dflt) {
    String v = flags.get(flag);
    if (v == null) {
      return dflt;
    }
    try {
      long n = Long.parseLong(v);
      if (n >= 0) {
        return n;
      }
    } catch (NumberFormatException e) {
      // below
    }
    throw new IllegalArgumentException(flag + " must be an integer >= 0, got '" + v + "'");
  }

  private static long positive(Map<String, String> flags, String flag, long dflt) {
    String v = flags.get(flag);
    if (v == null) {
      return dflt;
    }
    long n;
    try {
      n = Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + " must be a positive integer, got '" + v + "'");
    }
    if (n <= 0 || (flag.equals("--parallelism") && n > Integer.MAX_VALUE)) {
      throw new IllegalArgumentException(flag + " must be a positive integer, got '" + v + "'");
    }
    return n;
  }
}
