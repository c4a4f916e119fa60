package io.wattgraph.stream.sink.neo4j;

import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.transaction.EdgeMetricsRow;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.metrics.MetricGroup;
import org.neo4j.driver.Session;

/**
 * Writes the latest edge window as properties of the existing {@code TALKS_TO} relationship
 * between the two nodes (MATCH: edges exist through the connection graph, written by ConnectionGraphWriter;
 * a window of an edge the graph has not got yet is not kept, the next one sets it). One
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

  /** Windows whose latency histograms are kept per edge ({@link NodeWindows#latencyTotals}). */
  private final int latencyShareWindows;

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
  }

  /** One row per edge and window: each window adds its share to the latency totals. */
  @Override
  public String key(EdgeMetricsRow row) {
    return row.key() + "@" + row.windowEndNs;
  }

  @Override
  public void write(Collection<EdgeMetricsRow> rows) {
    List<Map<String, List<Map<String, Object>>>> rounds = NodeWindows.rounds(rows, EdgeMetricsRow::key,
        r -> r.windowEndNs, r -> r.revision).stream().map(EdgeMetricsGraphWriter::byLabels).toList();
    if (rounds.isEmpty()) {
      return;
    }
    try (Session session = driver.session()) {
      countPast(session.executeWrite(tx -> {
        long past = 0;
        for (var round : rounds) {
          for (var e : round.entrySet()) {
            String[] l = e.getKey().split("\\|");
            past += runCountingPast(tx, EDGES.formatted(l[0], l[1]),
                Map.of("rows", e.getValue(), "latencyShareWindows", latencyShareWindows));
          }
        }
        return past;
      }));
    }
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
      String labels = label(r.clientKind) + "|" + label(r.serverKind);
      byLabels.computeIfAbsent(labels, k -> new ArrayList<>()).add(m);
    }
    return byLabels;
  }

  private static String label(String kind) {
    return EdgeInput.PROCESS.equals(kind) ? "Process" : "External";
  }
}
