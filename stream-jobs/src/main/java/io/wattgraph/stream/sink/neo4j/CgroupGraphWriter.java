package io.wattgraph.stream.sink.neo4j;

import io.wattgraph.stream.window.CgroupRow;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.neo4j.driver.Session;

/**
 * Writes the container windows of the agents' CgroupStats onto {@code Container {id: containerId}}
 * (MERGE, with its {@code RUNS_ON} host, as the other writers): CPU mean and peak, throttling,
 * memory (the window's peak as {@code memoryBytes}, what placement sizes a container by; the last
 * and the mean too), block I/O, tasks, and the Kubernetes requests {@code cpuRequest} (cores) and
 * {@code memoryRequestBytes} (docs/graph-model.md). A window with pod metadata sets the requests
 * as the pod spec has them (null: no request); one without leaves them as they were. Guarded by its own
 * ({@code cgroupWindowEndNs}, {@code cgroupRevision}): idempotent and monotonic, like
 * {@link NodeMetricsGraphWriter}, with which it shares the history rules ({@link NodeWindows}); its
 * history lists are {@code historyCgroupWindowEndNs}, {@code historyCgroupRevision},
 * {@code historyMemoryBytes}, {@code historyCpuPeakCores}, {@code historyThrottledS}.
 */
public class CgroupGraphWriter extends WindowGraphWriter<CgroupRow> {

  private static final String HISTORY = NodeWindows.history("historyCgroupWindowEndNs", "historyCgroupRevision",
      "historyMemoryBytes", "historyCpuPeakCores", "historyThrottledS");

  private static final String PROPERTIES = """
      SET n.cpuMeanCores = r.cpuMeanCores, n.cpuPeakCores = r.cpuPeakCores,
          n.throttledS = r.throttledS, n.throttledPeriods = r.throttledPeriods,
          n.memoryBytes = r.memoryBytes, n.memoryLastBytes = r.memoryLastBytes, n.memoryMeanBytes = r.memoryMeanBytes,
          n.ioReadBytes = r.ioReadBytes, n.ioWriteBytes = r.ioWriteBytes, n.pids = r.pids,
          n.cgroupTicks = r.ticks, n.cgroupMaxTickGapNs = r.maxTickGapNs,
          n.cgroupWindowStartNs = r.windowStartNs, n.cgroupWindowEndNs = r.windowEndNs, n.cgroupRevision = r.revision,
          n.podUid = coalesce(r.podUid, n.podUid), n.podName = coalesce(r.podName, n.podName),
          n.podNamespace = coalesce(r.podNamespace, n.podNamespace), n.podLabels = coalesce(r.podLabels, n.podLabels),
          n.cpuRequest = CASE WHEN r.podName IS NULL THEN n.cpuRequest ELSE r.cpuRequest END,
          n.memoryRequestBytes = CASE WHEN r.podName IS NULL THEN n.memoryRequestBytes ELSE r.memoryRequestBytes END
      """;

  private final int historyWindows;
  private final String statement;

  public CgroupGraphWriter(Neo4jSettings settings, int historyWindows) {
    super(settings, "container cgroup rows", r -> r.windowEndNs, r -> r.revision);
    if (historyWindows < 0) {
      close();
      throw new IllegalArgumentException("historyWindows must be >= 0, got " + historyWindows);
    }
    this.historyWindows = historyWindows;
    this.statement = NodeMetricsGraphWriter.CONTAINERS + (historyWindows > 0 ? HISTORY : "")
        + "WITH n, r WHERE" + NodeWindows.newer("cgroupWindowEndNs", "cgroupRevision") + PROPERTIES;
  }

  /** With history one row per container and window, else one per container (as NodeMetricsGraphWriter). */
  @Override
  public String key(CgroupRow row) {
    return historyWindows > 0 ? row.key() + "@" + row.windowEndNs : row.key();
  }

  @Override
  public List<CgroupRow> write(Collection<CgroupRow> rows) {
    List<List<CgroupRow>> rounds = NodeWindows.rounds(rows, CgroupRow::key, r -> r.windowEndNs, r -> r.revision);
    if (rounds.isEmpty()) {
      return List.of();
    }
    List<List<Map<String, Object>>> parameters = rounds.stream().map(CgroupGraphWriter::parameters).toList();
    try (Session session = driver.session()) {
      session.executeWrite(tx -> {
        for (List<Map<String, Object>> round : parameters) {
          tx.run(statement, Map.of("rows", round, "historyWindows", historyWindows)).consume();
        }
        return null;
      });
    }
    return List.of();
  }

  static List<Map<String, Object>> parameters(List<CgroupRow> rows) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (CgroupRow r : rows) {
      Map<String, Object> m = new HashMap<>();
      m.put("id", r.groupId);
      m.put("hostId", r.hostId);
      m.put("windowStartNs", r.windowStartNs);
      m.put("windowEndNs", r.windowEndNs);
      m.put("revision", r.revision);
      m.put("cpuMeanCores", r.cpuMeanCores);
      m.put("cpuPeakCores", r.cpuPeakCores);
      m.put("throttledS", r.throttledSeconds);
      m.put("throttledPeriods", r.throttledPeriods);
      m.put("memoryBytes", r.memoryPeakBytes);
      m.put("memoryLastBytes", r.memoryLastBytes);
      m.put("memoryMeanBytes", r.memoryMeanBytes);
      m.put("ioReadBytes", r.ioReadBytes);
      m.put("ioWriteBytes", r.ioWriteBytes);
      m.put("pids", r.pids);
      m.put("ticks", r.ticks);
      m.put("maxTickGapNs", r.maxTickGapNs);
      m.put("podUid", r.podUid);
      m.put("podName", r.pod == null ? null : r.pod.name);
      m.put("podNamespace", r.pod == null ? null : r.pod.namespace);
      m.put("podLabels", r.pod == null ? null : List.of(r.pod.labels));
      m.put("cpuRequest", r.cpuRequestCores);
      m.put("memoryRequestBytes", r.memoryRequestBytes);
      m.put("historyMemoryBytes", (double) r.memoryPeakBytes);
      m.put("historyCpuPeakCores", r.cpuPeakCores);
      m.put("historyThrottledS", r.throttledSeconds);
      out.add(m);
    }
    return out;
  }
}
