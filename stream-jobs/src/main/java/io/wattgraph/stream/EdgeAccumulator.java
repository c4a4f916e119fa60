package io.wattgraph.stream;

import io.wattgraph.stream.transaction.EdgeInput;

/** Running totals of one edge window: both ends' TransactionStats merged (a Flink POJO). */
public class EdgeAccumulator {
  public String clientKind;
  public String clientId;
  public String serverKind;
  public String serverId;
  public TransactionTotals tx = new TransactionTotals();

  public EdgeAccumulator() {}

  public void add(EdgeInput in) {
    if (clientId == null) {
      clientKind = in.clientKind;
      clientId = in.clientId;
      serverKind = in.serverKind;
      serverId = in.serverId;
    }
    Transaction t = in.transaction;
    if (in.retraction) {
      tx.remove(t.isClient(), t.transactions, t.requestBytes, t.responseBytes, t.subBucketBits, t.buckets, t.counts);
      return;
    }
    tx.add(t.isClient(), t.transactions, t.requestBytes, t.responseBytes, t.subBucketBits, t.buckets, t.counts);
  }

  public void merge(EdgeAccumulator o) {
    if (o.clientId == null) {
      return;
    }
    if (clientId == null) {
      clientKind = o.clientKind;
      clientId = o.clientId;
      serverKind = o.serverKind;
      serverId = o.serverId;
    }
    tx.merge(o.tx);
  }
}
