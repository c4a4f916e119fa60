package io.wattgraph.stream.sink.kafka;

import io.wattgraph.schema.EdgeEndKind;
import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.TransactionTotals;
import io.wattgraph.stream.transaction.EdgeMetricsRow;

/**
 * An edge window result as a record of the edge metrics topic: key UTF-8 {@code P:client>P:server}
 * (kind-qualified graph ids; every window and revision of an edge on one partition, in order), value
 * {@code EdgeMetrics} in Avro single-object encoding, timestamp the window end (ms).
 */
public class EdgeMetricsSerializer extends WindowResultSerializer<EdgeMetricsRow, EdgeMetrics> {
  private static final long serialVersionUID = 1L;

  public EdgeMetricsSerializer(String topic) {
    super(topic, WattgraphSchemas::edgeMetricsEncoder, EdgeMetricsSerializer::toAvro, EdgeMetricsRow::key,
        r -> r.windowEndNs);
  }

  public static EdgeMetrics toAvro(EdgeMetricsRow r) {
    TransactionTotals t = r.tx;
    EdgeMetrics record = EdgeMetrics.newBuilder()
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
        .setNetworkTimeMeanNs(r.networkTimeMeanNs)
        .build();
    return putLatency(record, t, r.clientRtt, r.serverTime);
  }
}
