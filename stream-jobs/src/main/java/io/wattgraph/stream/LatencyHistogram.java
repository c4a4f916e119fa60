package io.wattgraph.stream;

import io.wattgraph.schema.TransactionHistograms;
import io.wattgraph.stream.window.LatencyStats;
import java.util.Arrays;

/**
 * A latency histogram in a window's state: the TransactionStats bucket scheme
 * ({@link TransactionHistograms}), bucket indexes strictly ascending with their counts (a Flink
 * POJO: two primitive arrays). Merging adds the counts of equal buckets, so the merge of any
 * records, in any order and grouping, is exactly the histogram of all their transactions.
 */
public class LatencyHistogram {
  public int[] buckets = new int[0];
  public long[] counts = new long[0];

  public LatencyHistogram() {}

  public static LatencyHistogram of(int[] buckets, long[] counts) {
    LatencyHistogram h = new LatencyHistogram();
    h.add(buckets, counts);
    return h;
  }

  /** Adds a sorted bucket/count array pair: a linear merge of the two sorted lists. */
  public void add(int[] b, long[] c) {
    if (b.length != c.length) {
      throw new IllegalArgumentException("bucket and count arrays differ in length");
    }
    if (b.length == 0) {
      return;
    }
    if (addInPlace(b, c)) {
      return;
    }
    int[] mb = new int[buckets.length + b.length];
    long[] mc = new long[mb.length];
    int i = 0;
    int j = 0;
    int n = 0;
    while (i < buckets.length || j < b.length) {
      if (j >= b.length || (i < buckets.length && buckets[i] < b[j])) {
        mb[n] = buckets[i];
        mc[n++] = counts[i++];
      } else if (i >= buckets.length || b[j] < buckets[i]) {
        mb[n] = b[j];
        mc[n++] = c[j++];
      } else {
        mb[n] = buckets[i];
        mc[n++] = counts[i++] + c[j++];
      }
    }
    buckets = Arrays.copyOf(mb, n);
    counts = Arrays.copyOf(mc, n);
  }

  /**
   * The common case once a window has seen a few records: every bucket of {@code b} is here
   * already, so the counts are added where they are, without new arrays. False (and nothing
   * changed) when a bucket is missing.
   */
  private boolean addInPlace(int[] b, long[] c) {
    if (b.length > buckets.length) {
      return false;
    }
    int i = 0;
    for (int bucket : b) {
      while (i < buckets.length && buckets[i] < bucket) {
        i++;
      }
      if (i == buckets.length || buckets[i] != bucket) {
        return false;
      }
    }
    i = 0;
    for (int j = 0; j < b.length; j++) {
      while (buckets[i] < b[j]) {
        i++;
      }
      counts[i] += c[j];
    }
    return true;
  }

  /** Drops buckets whose count went to 0 (a record taken back), so the histogram is the one of the records left. */
  void dropEmpty() {
    int n = 0;
    for (int i = 0; i < buckets.length; i++) {
      if (counts[i] != 0) {
        buckets[n] = buckets[i];
        counts[n++] = counts[i];
      }
    }
    if (n < buckets.length) {
      buckets = Arrays.copyOf(buckets, n);
      counts = Arrays.copyOf(counts, n);
    }
  }

  public void add(LatencyHistogram o) {
    add(o.buckets, o.counts);
  }

  long total() {
    return Arrays.stream(counts).sum();
  }

  /** Summary statistics read off the merged histogram; all null when it is empty. */
  public LatencyStats stats(int subBucketBits) {
    LatencyStats s = new LatencyStats();
    long total = total();
    if (total == 0) {
      return s;
    }
    // The percentile rule and the bucket bounds are the schema module's, shared with the agent's docs.
    TransactionHistograms.Histogram h = new TransactionHistograms.Histogram(subBucketBits)
        .add(Arrays.stream(buckets).boxed().toList(), Arrays.stream(counts).boxed().toList());
    double sum = 0;
    for (int i = 0; i < buckets.length; i++) {
      sum += (double) counts[i] * TransactionHistograms.midpoint(buckets[i], subBucketBits);
    }
    s.meanNs = sum / total;
    s.sumNs = sum;
    s.octaves = TransactionHistograms.octaveCounts(buckets, counts, subBucketBits);
    s.p50Ns = h.percentile(0.50);
    s.p75Ns = h.percentile(0.75);
    s.p90Ns = h.percentile(0.90);
    s.p99Ns = h.percentile(0.99);
    return s;
  }
}
