package io.wattgraph.stream.sink.neo4j;

import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.transaction.EdgeMetricsRow;
import io.wattgraph.stream.window.LatencyStats;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.ThreadSafeSimpleCounter;
import org.neo4j.driver.Session;
import org.neo4j.driver.TransactionContext;

/**
 * Writes the latest edge window as properties of the existing {@code TALKS_TO} relationship
 * between the two nodes (MATCH: edges are made, moved and deleted by the connection path, ConnectionGraphWriter;
 * this writer never creates one, which would bring back an External edge that path deleted). A window of an edge
 * the graph has not got yet is returned by {@link #write}, so the sink writer offers it again until the edge is
 * there (or {@code --edge-wait-ms} passed: dropped and counted, {@value #WITHOUT_EDGE_METRIC}); one that carries no
 * requests (a revision retracted to nothing) has nothing to add to the totals and is dropped at once. One
 * {@code UNWIND $rows} statement per (client label, server label) in one write transaction per
 * batch, windows of one edge in successive statements (oldest first). Idempotent and monotonic like {@link NodeMetricsGraphWriter}: a row is applied only if its
 * (windowEndNs, revision) is not older than the relationship's ({@code latencyWindowEndNs},
 * {@code latencyRevision}). The client round trips' and server times' octave counts are also summed over the
 * latest revision of every window ({@link NodeWindows#latencyTotals}) for the exported histograms.
 */
public class EdgeMetricsGraphWriter extends WindowGraphWriter<EdgeMetricsRow> {

  private static final String EDGES = """
      UNWIND $rows AS r
      MATCH (a:%s {id: r.clientId})-[t:TALKS_TO]->(b:%s {id: r.serverId})
      """ + NodeWindows.latencyTotals("t", "clientRtt", "serverTime") + NodeWindows.countingPast("t", """
      WITH t, r WHERE t.latencyWindowEndNs IS NULL OR t.latencyWindowEndNs < r.windowEndNs
        OR (t.latencyWindowEndNs = r.windowEndNs AND coalesce(t.latencyRevision, -1) <= r.revision)
      """ + NodeWindows.latencyWindow("t", "clientRtt", "serverTime") + """
      SET t.requestRate = r.requestRate, t.windowRequestBytes = r.requestBytes,
          t.windowResponseBytes = r.responseBytes,
          t.clientRttMeanNs = r.clientRttMeanNs, t.clientRttP50Ns = r.clientRttP50Ns,
          t.clientRttP75Ns = r.clientRttP75Ns, t.clientRttP90Ns = r.clientRttP90Ns, t.clientRttP99Ns = r.clientRttP99Ns,
          t.serverTimeMeanNs = r.serverTimeMeanNs, t.serverTimeP50Ns = r.serverTimeP50Ns,
          t.serverTimeP75Ns = r.serverTimeP75Ns, t.serverTimeP90Ns = r.serverTimeP90Ns,
          t.serverTimeP99Ns = r.serverTimeP99Ns, t.networkTimeMeanNs = r.networkTimeMeanNs,
          t.latencyWindowStartNs = r.windowStartNs, t.latencyWindowEndNs = r.windowEndNs,
          t.latencyRevision = r.revision
      """);

  /** The rows' edges that are not in the graph (yet): their rows are not written but returned. */
  private static final String MISSING = """
      UNWIND $rows AS r
      WITH r WHERE NOT EXISTS { MATCH (:%s {id: r.clientId})-[:TALKS_TO]->(:%s {id: r.serverId}) }
      RETURN DISTINCT r.key AS key
      """;

  /** The job's metric of edge windows dropped because their edge did not come within the wait. */
  public static final String WITHOUT_EDGE_METRIC = "edgeWindowsWithoutEdge";
  /** Over every writer of this JVM (tests read it). */
  public static final AtomicLong WITHOUT_EDGE = new AtomicLong();
  /** Rows returned to wait for their edge, over every writer of this JVM (tests read it). */
  public static final AtomicLong WAITING = new AtomicLong();

  /** Windows whose latency histograms are kept per edge ({@link NodeWindows#latencyTotals}). */
  private final int latencyShareWindows;
  /** Counted on the task's thread, read by the metrics reporter. */
  private final Counter withoutEdge = new ThreadSafeSimpleCounter();

  public EdgeMetricsGraphWriter(Neo4jSettings settings, int latencyShareWindows) {
    super(settings, "edge metrics rows", r -> r.windowEndNs, r -> r.revision);
    if (latencyShareWindows < 1) {
      close();
      throw new IllegalArgumentException("latencyShareWindows must be >= 1, got " + latencyShareWindows);
    }
    this.latencyShareWindows = latencyShareWindows;
  }

  @Override
  public void registerMetrics(MetricGroup group) {
    registerPastShares(group);
    group.counter(WITHOUT_EDGE_METRIC, withoutEdge);
  }

  @Override
  public void gaveUp(Collection<EdgeMetricsRow> rows) {
    withoutEdge.inc(rows.size());
    WITHOUT_EDGE.addAndGet(rows.size());
  }

  /** Edge windows this writer dropped because their edge did not come. */
  public long withoutEdge() {
    return withoutEdge.getCount();
  }

  /** One row per edge and window: each window adds its share to the latency totals. */
  @Override
  public String key(EdgeMetricsRow row) {
    return row.key() + "@" + row.windowEndNs;
  }

  /** Writes the rows of edges the graph has; returns those of edges it has not got yet that carry requests. */
  @Override
  public List<EdgeMetricsRow> write(Collection<EdgeMetricsRow> rows) {
    if (rows.isEmpty()) {
      return List.of();
    }
    try (Session session = driver.session()) {
      Written written = session.executeWrite(tx -> {
        Set<String> missing = missingEdges(tx, rows);
        List<Map<String, List<Map<String, Object>>>> rounds = NodeWindows.rounds(
            rows.stream().filter(r -> !missing.contains(r.key())).toList(), EdgeMetricsRow::key,
            r -> r.windowEndNs, r -> r.revision).stream().map(EdgeMetricsGraphWriter::byLabels).toList();
        long past = 0;
        for (var round : rounds) {
          for (var e : round.entrySet()) {
            String[] l = e.getKey().split("\\|");
            past += runCountingPast(tx, EDGES.formatted(l[0], l[1]),
                Map.of("rows", e.getValue(), "latencyShareWindows", latencyShareWindows));
          }
        }
        return new Written(past, missing);
      });
      countPast(written.past);
      List<EdgeMetricsRow> waiting =
          rows.stream().filter(r -> written.missing.contains(r.key()) && carriesRequests(r)).toList();
      WAITING.addAndGet(waiting.size());
      return waiting;
    }
  }

  private record Written(long past, Set<String> missing) {}

  /** The keys of the rows' edges that the graph has not got. */
  private static Set<String> missingEdges(TransactionContext tx, Collection<EdgeMetricsRow> rows) {
    Map<String, List<Map<String, Object>>> byLabels = new TreeMap<>();
    for (EdgeMetricsRow r : rows) {
      byLabels.computeIfAbsent(labels(r), k -> new ArrayList<>())
          .add(Map.of("clientId", r.clientId, "serverId", r.serverId, "key", r.key()));
    }
    Set<String> missing = new HashSet<>();
    for (var e : byLabels.entrySet()) {
      String[] l = e.getKey().split("\\|");
      tx.run(MISSING.formatted(l[0], l[1]), Map.of("rows", e.getValue()))
          .forEachRemaining(rec -> missing.add(rec.get("key").asString()));
    }
    return missing;
  }

  /** Whether the window has requests or latencies to add (a revision retracted to nothing has not). */
  static boolean carriesRequests(EdgeMetricsRow r) {
    return r.requestRate != 0 || counts(r.clientRtt) || counts(r.serverTime);
  }

  private static boolean counts(LatencyStats s) {
    if (s == null || s.octaves == null) {
      return false;
    }
    for (long n : s.octaves) {
      if (n != 0) {
        return true;
      }
    }
    return false;
  }

  /** A round's rows (at most one per edge) as parameters per (client label, server label), in a fixed order. */
  private static Map<String, List<Map<String, Object>>> byLabels(List<EdgeMetricsRow> rows) {
    // Labels cannot be parameters: one statement per label pair.
    Map<String, List<Map<String, Object>>> byLabels = new TreeMap<>();
    for (EdgeMetricsRow r : rows) {
      Map<String, Object> m = new HashMap<>();
      m.put("clientId", r.clientId);
      m.put("serverId", r.serverId);
      m.put("requestRate", r.requestRate);
      m.put("requestBytes", r.requestBytes);
      m.put("responseBytes", r.responseBytes);
      m.put("clientRttMeanNs", r.clientRtt.meanNs);
      m.put("clientRttP50Ns", r.clientRtt.p50Ns);
      m.put("clientRttP75Ns", r.clientRtt.p75Ns);
      m.put("clientRttP90Ns", r.clientRtt.p90Ns);
      m.put("clientRttP99Ns", r.clientRtt.p99Ns);
      m.put("serverTimeMeanNs", r.serverTime.meanNs);
      m.put("serverTimeP50Ns", r.serverTime.p50Ns);
      m.put("serverTimeP75Ns", r.serverTime.p75Ns);
      m.put("serverTimeP90Ns", r.serverTime.p90Ns);
      m.put("serverTimeP99Ns", r.serverTime.p99Ns);
      m.put("networkTimeMeanNs", r.networkTimeMeanNs);
      NodeWindows.putLatency(m, "clientRtt", r.clientRtt);
      NodeWindows.putLatency(m, "serverTime", r.serverTime);
      m.put("windowStartNs", r.windowStartNs);
      m.put("windowEndNs", r.windowEndNs);
      m.put("revision", r.revision);
      byLabels.computeIfAbsent(labels(r), k -> new ArrayList<>()).add(m);
    }
    return byLabels;
  }

  private static String labels(EdgeMetricsRow r) {
    return label(r.clientKind) + "|" + label(r.serverKind);
  }

  private static String label(String kind) {
    return EdgeInput.PROCESS.equals(kind) ? "Process" : "External";
  }
}
