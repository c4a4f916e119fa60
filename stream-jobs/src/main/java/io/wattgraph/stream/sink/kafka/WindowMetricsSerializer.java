package io.wattgraph.stream.sink.kafka;

import io.wattgraph.schema.HttpRouteRole;
import io.wattgraph.schema.MetricsLevel;
import io.wattgraph.schema.MetricsPowerSource;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.schema.WindowHttpRoute;
import io.wattgraph.schema.WindowMetrics;
import io.wattgraph.stream.HttpRoute;
import io.wattgraph.stream.window.HttpRouteRow;
import io.wattgraph.stream.window.MetricsRow;
import java.util.Arrays;
import java.util.Map;

/**
 * A window result as a record of the metrics topic: key UTF-8 {@code LEVEL|hostId|entityId}
 * (all windows and revisions of an entity on one partition, in order), value {@code WindowMetrics}
 * in Avro single-object encoding, timestamp the window end (ms).
 */
public class WindowMetricsSerializer extends WindowResultSerializer<MetricsRow, WindowMetrics> {
  private static final long serialVersionUID = 1L;

  public WindowMetricsSerializer(String topic) {
    super(topic, WattgraphSchemas::windowMetricsEncoder, WindowMetricsSerializer::toAvro, MetricsRow::key,
        r -> r.windowEndNs);
  }

  public static WindowMetrics toAvro(MetricsRow r) {
    WindowMetrics.Builder b = WindowMetrics.newBuilder()
        .setLevel(MetricsLevel.valueOf(r.level))
        .setHostId(r.hostId)
        .setEntityId(r.entityId)
        .setGroupId(r.groupId)
        .setPodUid(r.podUid)
        .setComm(r.comm)
        .setPodName(r.pod == null ? null : r.pod.name)
        .setPodNamespace(r.pod == null ? null : r.pod.namespace)
        .setPodLabels(r.pod == null ? Map.of() : r.pod.labelMap())
        .setWindowStartNs(r.windowStartNs)
        .setWindowEndNs(r.windowEndNs)
        .setRevision(r.revision)
        .setSamples(r.samples)
        .setIntervals(r.intervals)
        .setCpuSeconds(r.cpuSeconds)
        .setCpuCores(r.cpuCores)
        .setHostCores(r.hostCores)
        .setHostCpuShare(r.hostCpuShare)
        .setEnergyJoules(r.energyJoules)
        .setPowerWatts(r.powerWatts)
        .setIdlePowerWatts(r.idlePowerWatts)
        .setPowerSource(MetricsPowerSource.valueOf(r.powerSource))
        .setThreads(r.threads)
        .setProcesses(r.processes)
        .setUtilization(r.utilization)
        .setServiceDemandSeconds(r.serviceDemandSeconds)
        .setSaturationRate(r.saturationRate);
    if (r.tx != null) {
      // Routes come from TransactionStats: only a window with transaction fields has them.
      b.setHttpRoutes(Arrays.stream(r.httpRoutes).map(WindowMetricsSerializer::toAvro).toList());
    }
    return putTransactions(b.build(), r);
  }

  static WindowHttpRoute toAvro(HttpRouteRow row) {
    HttpRoute h = row.route;
    return WindowHttpRoute.newBuilder()
        .setRole(HttpRouteRole.valueOf(h.role))
        .setMethod(h.method)
        .setPath(h.path)
        .setPathTruncated(h.pathTruncated)
        .setTransactions(h.transactions)
        .setRequestRate(row.requestRate)
        .setLatencyMeanNs(row.latency.meanNs)
        // Not null: every route has a latency histogram (TransactionStatsDeserializer#routeProblem).
        .setLatencyP50Ns(row.latency.p50Ns)
        .setLatencyP90Ns(row.latency.p90Ns)
        .setLatencyP99Ns(row.latency.p99Ns)
        .setLatencyBuckets(ints(h.latency.buckets))
        .setLatencyCounts(longs(h.latency.counts))
        .build();
  }
}
