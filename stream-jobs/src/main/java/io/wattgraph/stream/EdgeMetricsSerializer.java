package io.wattgraph.stream;

import io.wattgraph.schema.EdgeEndKind;
import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.WattgraphSchemas;
import org.apache.avro.message.BinaryMessageEncoder;

/**
 * An edge window result as a record of the edge metrics topic: key UTF-8 {@code P:client>P:server}
 * (kind-qualified graph ids; every window and revision of an edge on one partition, in order), value
 * {@code EdgeMetrics} in Avro single-object encoding, timestamp the window end (ms).
 */
public class EdgeMetricsSerializer extends WindowResultSerializer<EdgeMetricsRow, EdgeMetrics> {
  private static final long serialVersionUID = 1L;

  public EdgeMetricsSerializer(String topic) {
    super(topic);
  }

  @Override
  BinaryMessageEncoder<EdgeMetrics> newEncoder() {
    return WattgraphSchemas.edgeMetricsEncoder();
  }

  @Override
  EdgeMetrics toRecord(EdgeMetricsRow r) {
    return toAvro(r);
  }

  @Override
  String key(EdgeMetricsRow r) {
    return r.key();
  }

  @Override
  long windowEndNs(EdgeMetricsRow r) {
    return r.windowEndNs;
  }

  public static EdgeMetrics toAvro(EdgeMetricsRow r) {
    TransactionTotals t = r.tx;
    return EdgeMetrics.newBuilder()
        .setClientKind(EdgeEndKind.valueOf(r.clientKind))
        .setClientId(r.clientId)
        .setServerKind(EdgeEndKind.valueOf(r.serverKind))
        .setServerId(r.serverId)
        .setWindowStartNs(r.windowStartNs)
        .setWindowEndNs(r.windowEndNs)
        .setRevision(r.revision)
        .setClientTransactions(t.clientTransactions)
        .setServerTransactions(t.serverTransactions)
        .setRequestRate(r.requestRate)
        .setRequestBytes(r.requestBytes)
        .setResponseBytes(r.responseBytes)
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
        .setNetworkTimeMeanNs(r.networkTimeMeanNs)
        .setClientRttBuckets(WindowMetricsSerializer.ints(t.clientRtt.buckets))
        .setClientRttCounts(WindowMetricsSerializer.longs(t.clientRtt.counts))
        .setServerTimeBuckets(WindowMetricsSerializer.ints(t.serverTime.buckets))
        .setServerTimeCounts(WindowMetricsSerializer.longs(t.serverTime.counts))
        .build();
  }
}
