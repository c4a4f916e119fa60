package io.wattgraph.stream;

import io.wattgraph.stream.source.TransactionStatsDeserializer;

/**
 * The transaction part of a window's state (entity windows and edge windows alike): counts and
 * bytes per role and the two latency histograms, merged exactly (bucket counts added). A Flink POJO.
 */
public class TransactionTotals {
  /** TransactionStats records added. */
  public int records;
  public long clientTransactions;
  public long serverTransactions;
  public long clientRequestBytes;
  public long clientResponseBytes;
  public long serverRequestBytes;
  public long serverResponseBytes;
  public int subBucketBits = TransactionStatsDeserializer.SUB_BUCKET_BITS;
  /** CLIENT records' round-trip times. */
  public LatencyHistogram clientRtt = new LatencyHistogram();
  /** SERVER records' server times. */
  public LatencyHistogram serverTime = new LatencyHistogram();

  public TransactionTotals() {}

  public void add(boolean client, long transactions, long requestBytes, long responseBytes, int s, int[] buckets,
      long[] counts) {
    if (s != subBucketBits) {
      // The deserializer lets only one scheme through; merging two would be wrong, not approximate.
      throw new IllegalArgumentException("cannot merge subBucketBits " + s + " into " + subBucketBits);
    }
    records++;
    if (client) {
      clientTransactions += transactions;
      clientRequestBytes += requestBytes;
      clientResponseBytes += responseBytes;
      clientRtt.add(buckets, counts);
    } else {
      serverTransactions += transactions;
      serverRequestBytes += requestBytes;
      serverResponseBytes += responseBytes;
      serverTime.add(buckets, counts);
    }
  }

  /**
   * Takes back a record {@link #add}ed before (one end counted on an External edge until its real edge
   * was known): every count subtracted, so the totals are those of the records that stay. Rare, so the
   * negated counts may be a new array.
   */
  public void remove(boolean client, long transactions, long requestBytes, long responseBytes, int s, int[] buckets,
      long[] counts) {
    long[] negated = new long[counts.length];
    for (int i = 0; i < counts.length; i++) {
      negated[i] = -counts[i];
    }
    add(client, -transactions, -requestBytes, -responseBytes, s, buckets, negated);
    records -= 2;
    (client ? clientRtt : serverTime).dropEmpty();
  }

  void merge(TransactionTotals o) {
    if (o.subBucketBits != subBucketBits) {
      throw new IllegalArgumentException("cannot merge subBucketBits " + o.subBucketBits + " into " + subBucketBits);
    }
    records += o.records;
    clientTransactions += o.clientTransactions;
    serverTransactions += o.serverTransactions;
    clientRequestBytes += o.clientRequestBytes;
    clientResponseBytes += o.clientResponseBytes;
    serverRequestBytes += o.serverRequestBytes;
    serverResponseBytes += o.serverResponseBytes;
    clientRtt.add(o.clientRtt);
    serverTime.add(o.serverTime);
  }
}
