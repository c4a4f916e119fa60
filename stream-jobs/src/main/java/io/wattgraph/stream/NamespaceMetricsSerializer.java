package io.wattgraph.stream;

import io.wattgraph.schema.NamespaceMetrics;
import io.wattgraph.schema.NamespacePowerSource;
import io.wattgraph.schema.WattgraphSchemas;
import org.apache.avro.message.BinaryMessageEncoder;

/**
 * A NAMESPACE window result as a record of the namespace metrics topic: key the UTF-8 namespace
 * (all windows and revisions of a namespace on one partition, in order), value
 * {@code NamespaceMetrics} in Avro single-object encoding, timestamp the window end (ms).
 */
public class NamespaceMetricsSerializer extends WindowResultSerializer<MetricsRow, NamespaceMetrics> {
  private static final long serialVersionUID = 1L;

  public NamespaceMetricsSerializer(String topic) {
    super(topic);
  }

  @Override
  BinaryMessageEncoder<NamespaceMetrics> newEncoder() {
    return WattgraphSchemas.namespaceMetricsEncoder();
  }

  @Override
  NamespaceMetrics toRecord(MetricsRow r) {
    return toAvro(r);
  }

  @Override
  String key(MetricsRow r) {
    return r.entityId;
  }

  @Override
  long windowEndNs(MetricsRow r) {
    return r.windowEndNs;
  }

  public static NamespaceMetrics toAvro(MetricsRow r) {
    if (!MetricInput.NAMESPACE.equals(r.level)) {
      throw new IllegalArgumentException("not a namespace row: " + r);
    }
    NamespaceMetrics.Builder b = NamespaceMetrics.newBuilder()
        .setNamespace(r.entityId)
        .setWindowStartNs(r.windowStartNs)
        .setWindowEndNs(r.windowEndNs)
        .setRevision(r.revision)
        .setHosts(r.hosts)
        .setPods(r.pods)
        .setContainers(r.containers)
        .setSamples(r.samples)
        .setCpuSeconds(r.cpuSeconds)
        .setCpuCores(r.cpuCores)
        .setEnergyJoules(r.energyJoules)
        .setPowerWatts(r.powerWatts)
        .setPowerSource(NamespacePowerSource.valueOf(r.powerSource));
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
        .setClientRttBuckets(WindowMetricsSerializer.ints(t.clientRtt.buckets))
        .setClientRttCounts(WindowMetricsSerializer.longs(t.clientRtt.counts))
        .setServerTimeBuckets(WindowMetricsSerializer.ints(t.serverTime.buckets))
        .setServerTimeCounts(WindowMetricsSerializer.longs(t.serverTime.counts))
        .build();
  }
}
