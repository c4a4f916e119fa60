package io.wattgraph.stream.transaction;

import io.wattgraph.stream.EdgeAccumulator;
import io.wattgraph.stream.TransactionTotals;
import io.wattgraph.stream.window.RevisionWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;

/** Turns an edge window's accumulator into an {@link EdgeMetricsRow} (revisions as for entities). */
public class EdgeWindowFunction extends RevisionWindowFunction<EdgeAccumulator, EdgeMetricsRow> {
  private static final long serialVersionUID = 1L;

  @Override
  protected EdgeMetricsRow toRow(EdgeAccumulator acc, TimeWindow w, int revision) {
    return row(acc, w, revision);
  }

  public static EdgeMetricsRow row(EdgeAccumulator acc, TimeWindow w, int revision) {
    double windowSeconds = (w.getEnd() - w.getStart()) / 1e3;
    TransactionTotals t = acc.tx;
    EdgeMetricsRow r = new EdgeMetricsRow();
    r.clientKind = acc.clientKind;
    r.clientId = acc.clientId;
    r.serverKind = acc.serverKind;
    r.serverId = acc.serverId;
    r.windowStartNs = w.getStart() * 1_000_000L;
    r.windowEndNs = w.getEnd() * 1_000_000L;
    r.revision = revision;
    r.tx = t;
    // Both ends count the same transactions and bytes; an interval boundary can put some of them
    // into the next window on one end only, so the larger is the better count (as the correlator
    // takes max(client sent, server received)). One end alone: its own count.
    r.requestRate = Math.max(t.clientTransactions, t.serverTransactions) / windowSeconds;
    r.requestBytes = Math.max(t.clientRequestBytes, t.serverRequestBytes);
    r.responseBytes = Math.max(t.clientResponseBytes, t.serverResponseBytes);
    r.clientRtt = t.clientRtt.stats(t.subBucketBits);
    r.serverTime = t.serverTime.stats(t.subBucketBits);
    r.networkTimeMeanNs = r.clientRtt.meanNs != null && r.serverTime.meanNs != null
        ? r.clientRtt.meanNs - r.serverTime.meanNs
        : null;
    return r;
  }
}
