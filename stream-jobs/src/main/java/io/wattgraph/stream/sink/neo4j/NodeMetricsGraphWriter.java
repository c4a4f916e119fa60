package io.wattgraph.stream.sink.neo4j;

import io.wattgraph.stream.window.HttpRouteRow;
import io.wattgraph.stream.window.LatencyStats;
import io.wattgraph.stream.window.MetricInput;
import io.wattgraph.stream.window.MetricsRow;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.metrics.MetricGroup;
import org.neo4j.driver.Session;
import org.neo4j.driver.TransactionContext;

/**
 * Writes the latest window's metrics as properties of the graph's nodes, one write transaction
 * per batch of {@code UNWIND $rows} statements (parameters only).
 *
 * <ul>
 *   <li>PROCESS rows onto existing {@code Process} nodes only (MATCH by the graph's id
 *   {@code hostId/tgid/startTimeNs}): processes appear in the graph through their connections; a
 *   process that never talked gets no node here.</li>
 *   <li>GROUP rows of containers onto {@code Container {id: containerId}} (MERGE, with its
 *   {@code RUNS_ON} host, as ConnectionGraphWriter does); the host group ("host") has no node.</li>
 *   <li>HOST rows onto {@code Host {id}} (MERGE).</li>
 *   <li>NAMESPACE rows onto {@code Namespace {id: namespace}} (MERGE, {@code name} = id): no
 *   threads, utilization or routes (see NamespaceWindowFunction), but host, pod and container
 *   counts.</li>
 * </ul>
 * Since WindowMetrics v2 the same row also carries the window's TransactionStats figures (served
 * request rate, latency percentiles) and the operational analysis (utilization, service demand,
 * saturation rate); null values remove the property (the latest window had none). Since v3 the
 * window's HTTP routes too, as parallel lists of primitives ({@link #putHttpRoutes}): the graph
 * service reads them without parsing anything. Since v4 Containers also get their pod's name,
 * namespace and labels ({@code key=value} list: Neo4j has no map properties), only when known.
 * Idempotent and monotonic: a row is applied only if its (windowEndNs, revision) is not older than
 * the node's ({@code metricsWindowEndNs}, {@code metricsRevision}), compared in the Cypher, so a
 * replay or a stale batch never overwrites a newer window.
 *
 * <p>History ({@code --history-windows} N > 0): each node also keeps its last N windows as parallel
 * lists {@code historyWindowEndNs}, {@code historyRevision}, {@code historyCpuUsage},
 * {@code historyPowerW}, {@code historyRequestRate} (sorted by window end; NaN = unknown), updated in
 * the same statement: one entry per window, replaced by a revision not older than its own, so
 * replays and restarts leave the same lists. The graph service sizes placement on their peak.
 *
 * <p>Latency histograms: the latest window's octave counts and midpoint sum of server times and client
 * round trips ({@code serverTimeOctaves}, {@code serverTimeSumNs}, {@code clientRtt...}) and their totals over
 * the latest revision of every window written ({@code serverTimeOctaveTotals}, {@code serverTimeSumNsTotal},
 * ...; {@link NodeWindows#latencyTotals}, with the last {@code latencyShareWindows} windows' shares), from which
 * the graph service exports monotonic histograms.
 */
public class NodeMetricsGraphWriter extends WindowGraphWriter<MetricsRow> {

  private static final String NEWER = NodeWindows.newer("metricsWindowEndNs", "metricsRevision");

  private static final String COMMON = """
      SET n.cpuUsage = r.cpuUsage, n.powerW = r.powerW, n.energyJ = r.energyJ, n.powerSource = r.powerSource,
          n.threads = r.threads, n.metricsWindowStartNs = r.windowStartNs, n.metricsWindowEndNs = r.windowEndNs,
          n.metricsRevision = r.revision,
          n.requestRate = r.requestRate, n.clientRequestRate = r.clientRequestRate,
          n.serverTimeMeanNs = r.serverTimeMeanNs, n.serverTimeP50Ns = r.serverTimeP50Ns,
          n.serverTimeP75Ns = r.serverTimeP75Ns, n.serverTimeP90Ns = r.serverTimeP90Ns,
          n.serverTimeP99Ns = r.serverTimeP99Ns,
          n.clientRttMeanNs = r.clientRttMeanNs, n.clientRttP50Ns = r.clientRttP50Ns,
          n.clientRttP75Ns = r.clientRttP75Ns, n.clientRttP90Ns = r.clientRttP90Ns,
          n.clientRttP99Ns = r.clientRttP99Ns,
          n.utilization = r.utilization, n.serviceDemandS = r.serviceDemandS, n.saturationRate = r.saturationRate,
          n.httpRouteKeys = r.httpRouteKeys, n.httpRouteTransactions = r.httpRouteTransactions,
          n.httpRouteRates = r.httpRouteRates, n.httpRouteMeanNs = r.httpRouteMeanNs,
          n.httpRouteP50Ns = r.httpRouteP50Ns, n.httpRouteP90Ns = r.httpRouteP90Ns, n.httpRouteP99Ns = r.httpRouteP99Ns
      """;

  /** The bounded history of the windows' CPU, power and request rate ({@link NodeWindows#history}). */
  private static final String HISTORY = NodeWindows.history("historyWindowEndNs", "historyRevision",
      "historyCpuUsage", "historyPowerW", "historyRequestRate");

  /** Both histograms summed over windows for the exported histograms, before the guard. */
  private static final String LATENCY_TOTALS = NodeWindows.latencyTotals("n", "serverTime", "clientRtt");

  /** Both histograms of the latest window. */
  private static final String LATENCY_WINDOW = NodeWindows.latencyWindow("n", "serverTime", "clientRtt");

  private static final String PROCESSES = """
      UNWIND $rows AS r
      MATCH (n:Process {id: r.id})
      """;

  /** Container nodes as ConnectionGraphWriter makes them (CgroupGraphWriter writes onto them too). */
  static final String CONTAINERS = """
      UNWIND $rows AS r
      MERGE (h:Host {id: r.hostId})
      MERGE (n:Container {id: r.id}) ON CREATE SET n.hostId = r.hostId
      MERGE (n)-[:RUNS_ON]->(h)
      """;

  private static final String CONTAINER_PROPERTIES = """
      SET n.processes = r.processes, n.podUid = coalesce(r.podUid, n.podUid),
          n.podName = coalesce(r.podName, n.podName), n.podNamespace = coalesce(r.podNamespace, n.podNamespace),
          n.podLabels = coalesce(r.podLabels, n.podLabels)
      """;

  private static final String HOSTS = """
      UNWIND $rows AS r
      MERGE (n:Host {id: r.id})
      """;

  private static final String HOST_PROPERTIES = """
      SET n.processes = r.processes, n.idlePowerW = r.idlePowerW, n.cores = coalesce(r.cores, n.cores)
      """;

  private static final String NAMESPACES = """
      UNWIND $rows AS r
      MERGE (n:Namespace {id: r.id}) ON CREATE SET n.name = r.id
      """;

  private static final String NAMESPACE_PROPERTIES = """
      SET n.hosts = r.hosts, n.pods = r.pods, n.containers = r.containers
      """;

  /** Namespace nodes are this sink's own (ConnectionGraphWriter does not write them). */
  static final String NAMESPACE_CONSTRAINT =
      "CREATE CONSTRAINT wattgraph_namespace_id IF NOT EXISTS FOR (n:Namespace) REQUIRE n.id IS UNIQUE";

  /** Windows kept per node ({@code --history-windows}); 0: latest window only. */
  private final int historyWindows;
  /** Windows whose latency histograms are kept per node ({@link NodeWindows#latencyTotals}). */
  private final int latencyShareWindows;
  private final String processes;
  private final String containers;
  private final String hosts;
  private final String namespaces;

  public NodeMetricsGraphWriter(Neo4jSettings settings, int historyWindows, int latencyShareWindows) {
    super(settings, "metrics rows", r -> r.windowEndNs, r -> r.revision, NAMESPACE_CONSTRAINT);
    if (historyWindows < 0 || latencyShareWindows < 1) {
      close();
      throw new IllegalArgumentException("historyWindows must be >= 0 and latencyShareWindows >= 1, got "
          + historyWindows + " and " + latencyShareWindows);
    }
    this.historyWindows = historyWindows;
    this.latencyShareWindows = latencyShareWindows;
    this.processes = statement(PROCESSES, "");
    this.containers = statement(CONTAINERS, CONTAINER_PROPERTIES);
    this.hosts = statement(HOSTS, HOST_PROPERTIES);
    this.namespaces = statement(NAMESPACES, NAMESPACE_PROPERTIES);
  }

  private String statement(String match, String properties) {
    return match + (historyWindows > 0 ? HISTORY : "") + LATENCY_TOTALS
        + NodeWindows.countingPast("n", "WITH n, r WHERE" + NEWER + LATENCY_WINDOW + COMMON + properties);
  }

  @Override
  public void registerMetrics(MetricGroup group) {
    registerPastShares(group);
  }

  /**
   * One row per entity and window: a batch may hold several windows of an entity (a backlog, a replay),
   * each needing its history entry and its share of the latency totals.
   */
  @Override
  public String key(MetricsRow row) {
    return row.key() + "@" + row.windowEndNs;
  }

  @Override
  public boolean accepts(MetricsRow row) {
    return hasNode(row);
  }

  /** Whether a row has a node to go to (PROCESS, container GROUP, HOST, NAMESPACE); POD and the host group do not. */
  static boolean hasNode(MetricsRow r) {
    return switch (r.level) {
      case MetricInput.PROCESS, MetricInput.HOST, MetricInput.NAMESPACE -> true;
      case MetricInput.GROUP -> !"host".equals(r.entityId);
      default -> false;
    };
  }

  /** Writes one batch (at most one row per key) in one transaction. */
  @Override
  public List<MetricsRow> write(Collection<MetricsRow> rows) {
    List<List<MetricsRow>> rounds = NodeWindows.rounds(rows.stream().filter(NodeMetricsGraphWriter::hasNode).toList(),
        MetricsRow::key, r -> r.windowEndNs, r -> r.revision);
    if (rounds.isEmpty()) {
      return List.of();
    }
    List<List<List<Map<String, Object>>>> byLabel = rounds.stream().map(NodeMetricsGraphWriter::parameters).toList();
    try (Session session = driver.session()) {
      countPast(session.executeWrite(tx -> {
        // Hosts first, then containers, then processes (every round of a label before the next label):
        // the order ConnectionGraphWriter locks them in too.
        String[] statements = {hosts, containers, processes, namespaces};
        long past = 0;
        for (int label = 0; label < statements.length; label++) {
          for (List<List<Map<String, Object>>> round : byLabel) {
            past += run(tx, statements[label], round.get(label));
          }
        }
        return past;
      }));
    }
    return List.of();
  }

  /** One round's rows as parameters: host, container, process and namespace rows, in that order. */
  private static List<List<Map<String, Object>>> parameters(List<MetricsRow> rows) {
    List<Map<String, Object>> processRows = new ArrayList<>();
    List<Map<String, Object>> containerRows = new ArrayList<>();
    List<Map<String, Object>> hostRows = new ArrayList<>();
    List<Map<String, Object>> namespaceRows = new ArrayList<>();
    for (MetricsRow r : rows) {
      Map<String, Object> m = new HashMap<>();
      m.put("id", r.entityId);
      m.put("hostId", r.hostId);
      m.put("cpuUsage", r.cpuCores);
      m.put("powerW", r.powerWatts);
      m.put("energyJ", r.energyJoules);
      m.put("powerSource", r.powerSource);
      m.put("threads", r.threads);
      m.put("processes", r.processes);
      m.put("windowStartNs", r.windowStartNs);
      m.put("windowEndNs", r.windowEndNs);
      m.put("revision", r.revision);
      m.put("podUid", r.podUid);
      // Null when unknown: the Cypher keeps a known name (a window with TransactionStats only has none).
      m.put("podName", r.pod == null ? null : r.pod.name);
      m.put("podNamespace", r.pod == null ? null : r.pod.namespace);
      m.put("podLabels", r.pod == null ? null : List.of(r.pod.labels));
      m.put("idlePowerW", r.idlePowerWatts);
      m.put("cores", r.hostCores);
      if (r.samples == 0) {
        // Only TransactionStats in this window: no CPU or power figures (null removes the old ones).
        for (String k : List.of("cpuUsage", "powerW", "energyJ", "powerSource", "threads", "processes", "idlePowerW")) {
          m.put(k, null);
        }
      }
      double windowSeconds = (r.windowEndNs - r.windowStartNs) / 1e9;
      m.put("requestRate", r.tx == null ? null : r.tx.serverTransactions / windowSeconds);
      m.put("clientRequestRate", r.tx == null ? null : r.tx.clientTransactions / windowSeconds);
      LatencyStats server = r.serverTime != null ? r.serverTime : new LatencyStats();
      LatencyStats client = r.clientRtt != null ? r.clientRtt : new LatencyStats();
      m.put("serverTimeMeanNs", server.meanNs);
      m.put("serverTimeP50Ns", server.p50Ns);
      m.put("serverTimeP75Ns", server.p75Ns);
      m.put("serverTimeP90Ns", server.p90Ns);
      m.put("serverTimeP99Ns", server.p99Ns);
      m.put("clientRttMeanNs", client.meanNs);
      m.put("clientRttP50Ns", client.p50Ns);
      m.put("clientRttP75Ns", client.p75Ns);
      m.put("clientRttP90Ns", client.p90Ns);
      m.put("clientRttP99Ns", client.p99Ns);
      NodeWindows.putLatency(m, "serverTime", r.serverTime);
      NodeWindows.putLatency(m, "clientRtt", r.clientRtt);
      m.put("utilization", r.utilization);
      m.put("serviceDemandS", r.serviceDemandSeconds);
      m.put("saturationRate", r.saturationRate);
      putHttpRoutes(m, r.httpRoutes);
      m.put("hosts", r.hosts);
      m.put("pods", r.pods);
      m.put("containers", r.containers);
      if (MetricInput.NAMESPACE.equals(r.level)) {
        // Thread counts are per host interval: not summed over hosts (null removes the property).
        m.put("threads", null);
      }
      m.put("historyCpuUsage", NodeWindows.orNaN((Double) m.get("cpuUsage")));
      m.put("historyPowerW", NodeWindows.orNaN((Double) m.get("powerW")));
      m.put("historyRequestRate", NodeWindows.orNaN((Double) m.get("requestRate")));
      switch (r.level) {
        case MetricInput.PROCESS -> processRows.add(m);
        case MetricInput.GROUP -> containerRows.add(m);
        case MetricInput.NAMESPACE -> namespaceRows.add(m);
        default -> hostRows.add(m);
      }
    }
    return List.of(hostRows, containerRows, processRows, namespaceRows);
  }

  /** The rows past the kept latency shares. */
  private long run(TransactionContext tx, String cypher, List<Map<String, Object>> rows) {
    return rows.isEmpty() ? 0 : runCountingPast(tx, cypher,
        Map.of("rows", rows, "historyWindows", historyWindows, "latencyShareWindows", latencyShareWindows));
  }

  /**
   * The routes as parallel lists, element i of each list describing route i (in the result's
   * order); all null (properties removed) when the window had no route. Neo4j lists hold no nulls:
   * every figure is present (each route has a latency histogram, TransactionStatsDeserializer).
   */
  public static void putHttpRoutes(Map<String, Object> m, HttpRouteRow[] routes) {
    List<String> keys = new ArrayList<>();
    List<Long> transactions = new ArrayList<>();
    List<Double> rates = new ArrayList<>();
    List<Double> means = new ArrayList<>();
    List<Long> p50 = new ArrayList<>();
    List<Long> p90 = new ArrayList<>();
    List<Long> p99 = new ArrayList<>();
    for (HttpRouteRow r : routes) {
      keys.add(r.route.key());
      transactions.add(r.route.transactions);
      rates.add(r.requestRate);
      means.add(r.latency.meanNs);
      p50.add(r.latency.p50Ns);
      p90.add(r.latency.p90Ns);
      p99.add(r.latency.p99Ns);
    }
    boolean none = routes.length == 0;
    m.put("httpRouteKeys", none ? null : keys);
    m.put("httpRouteTransactions", none ? null : transactions);
    m.put("httpRouteRates", none ? null : rates);
    m.put("httpRouteMeanNs", none ? null : means);
    m.put("httpRouteP50Ns", none ? null : p50);
    m.put("httpRouteP90Ns", none ? null : p90);
    m.put("httpRouteP99Ns", none ? null : p99);
  }
}
