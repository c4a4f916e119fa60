package io.wattgraph.stream;

import io.wattgraph.schema.HttpRouteRole;
import io.wattgraph.schema.MetricsLevel;
import io.wattgraph.schema.MetricsPowerSource;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.schema.WindowHttpRoute;
import io.wattgraph.schema.WindowMetrics;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.avro.message.BinaryMessageEncoder;

/**
 * A window result as a record of the metrics topic: key UTF-8 {@code LEVEL|hostId|entityId}
 * (all windows and revisions of an entity on one partition, in order), value {@code WindowMetrics}
 * in Avro single-object encoding, timestamp the window end (ms).
 */
public class WindowMetricsSerializer extends WindowResultSerializer<MetricsRow, WindowMetrics> {
  private static final long serialVersionUID = 1L;

  public WindowMetricsSerializer(String topic) {
    super(topic);
  }

  @Override
  BinaryMessageEncoder<WindowMetrics> newEncoder() {
    return WattgraphSchemas.windowMetricsEncoder();
  }

  @Override
  WindowMetrics toRecord(MetricsRow r) {
    return toAvro(r);
  }

  @Override
  String key(MetricsRow r) {
    return r.key();
  }

  @Override
  long windowEndNs(MetricsRow r) {
    return r.windowEndNs;
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
    TransactionTotals t = r.tx;
    if (t == null) {
      return b.build();
    }
    double windowSeconds = (r.windowEndNs - r.windowStartNs) / 1e9;
    return b.setClientTransactions(t.clientTransactions)
        .setServerTransactions(t.serverTransactions)
        .setClientRequestRate(t.clientTransactions / windowSeconds)
        .setServerRequestRate(t.serverTransactions / windowSeconds)
        .setClientRequestBytes(t.clientRequestBytes)
        .setClientResponseBytes(t.clientResponseBytes)
        .setServerRequestBytes(t.serverRequestBytes)
        .setServerResponseBytes(t.serverResponseBytes)
        .setLatencySubBucketBits(t.subBucketBits)
        .setClientRttMeanNs(r.clientRtt.meanNs)
        .setClientRttP50Ns(r.clientRtt.p50Ns)
        .setClientRttP75Ns(r.clientRtt.p75Ns)
        .setClientRttP90Ns(r.clientRtt.p90Ns)
        .setClientRttP99Ns(r.clientRtt.p99Ns)
        .setServerTimeMeanNs(r.serverTime.meanNs)
        .setServerTimeP50Ns(r.serverTime.p50Ns)
        .setServerTimeP75Ns(r.serverTime.p75Ns)
        .setServerTimeP90Ns(r.serverTime.p90Ns)
        .setServerTimeP99Ns(r.serverTime.p99Ns)
        .setClientRttBuckets(ints(t.clientRtt.buckets))
        .setClientRttCounts(longs(t.clientRtt.counts))
        .setServerTimeBuckets(ints(t.serverTime.buckets))
        .setServerTimeCounts(longs(t.serverTime.counts))
        .setHttpRoutes(Arrays.stream(r.httpRoutes).map(WindowMetricsSerializer::toAvro).toList())
        .build();
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

  static List<Integer> ints(int[] a) {
    return Arrays.stream(a).boxed().toList();
  }

  static List<Long> longs(long[] a) {
    return Arrays.stream(a).boxed().toList();
  }
}
