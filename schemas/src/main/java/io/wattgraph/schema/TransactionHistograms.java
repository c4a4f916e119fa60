package io.wattgraph.schema;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/**
 * The log-linear bucket scheme of {@link TransactionStats} histograms (the agent's kernel code
 * uses the same formula): exact merging by bucket-wise addition and nearest-rank percentiles.
 *
 * <p>With {@code s = subBucketBits} (7): a duration {@code v} (ns) is in bucket {@code v} when
 * {@code v < 2^(s+1)}, else in {@code ((e - s + 1) << s) | ((v >>> (e - s)) & (2^s - 1))} with
 * {@code e = floor(log2 v)}. Every value of a bucket is within {@code 2^-s} (0.78 %) of the
 * bucket's lower bound, and within {@code 2^-(s+1)} of its midpoint.
 */
public final class TransactionHistograms {

  private TransactionHistograms() {}

  /** Bucket index of a duration in ns (non-negative; values are treated as unsigned). */
  public static int bucketOf(long v, int s) {
    if (Long.compareUnsigned(v, 2L << s) < 0) {
      return (int) v;
    }
    int e = 63 - Long.numberOfLeadingZeros(v);
    int m = (int) ((v >>> (e - s)) & ((1L << s) - 1));
    return ((e - s + 1) << s) | m;
  }

  /** Smallest value (ns) in bucket {@code b}. */
  public static long lowerBound(int b, int s) {
    if (b < (2 << s)) {
      return b;
    }
    int e = (b >>> s) + s - 1;
    long m = b & ((1 << s) - 1);
    return ((1L << s) + m) << (e - s);
  }

  /** Largest value (ns) in bucket {@code b}, inclusive (unsigned for the very last bucket). */
  public static long upperBound(int b, int s) {
    if (b < (2 << s)) {
      return b;
    }
    int e = (b >>> s) + s - 1;
    return lowerBound(b, s) + ((1L << (e - s)) - 1);
  }

  /** Midpoint of bucket {@code b}: the value to report for a percentile that falls in it. */
  public static long midpoint(int b, int s) {
    long lo = lowerBound(b, s);
    return lo + (upperBound(b, s) - lo) / 2;
  }

  /** A merged histogram: bucket → count, ascending. */
  public static final class Histogram {
    private final TreeMap<Integer, Long> cells = new TreeMap<>();
    private final int subBucketBits;

    public Histogram(int subBucketBits) {
      this.subBucketBits = subBucketBits;
    }

    /** Adds parallel arrays (e.g. a record's serverTimeBuckets / serverTimeCounts). */
    public Histogram add(List<Integer> buckets, List<Long> counts) {
      if (buckets.size() != counts.size()) {
        throw new IllegalArgumentException("bucket and count arrays differ in length");
      }
      for (int i = 0; i < buckets.size(); i++) {
        cells.merge(buckets.get(i), counts.get(i), Long::sum);
      }
      return this;
    }

    /** Adds the latency histogram of a record (client round trips or server times by role). */
    public Histogram add(TransactionStats r) {
      if (r.getSubBucketBits() != subBucketBits) {
        throw new IllegalArgumentException("cannot merge subBucketBits " + r.getSubBucketBits() + " into " + subBucketBits);
      }
      return r.getRole() == TransactionRole.CLIENT
          ? add(r.getClientRttBuckets(), r.getClientRttCounts())
          : add(r.getServerTimeBuckets(), r.getServerTimeCounts());
    }

    public long total() {
      return cells.values().stream().mapToLong(Long::longValue).sum();
    }

    /** Nearest-rank percentile bucket ({@code q} in [0, 1]); -1 when empty. */
    public int percentileBucket(double q) {
      long total = total();
      if (total == 0) {
        return -1;
      }
      long rank = Math.max(1, Math.min(total, (long) Math.ceil(Math.max(0, Math.min(1, q)) * total)));
      long cum = 0;
      for (var c : cells.entrySet()) {
        cum += c.getValue();
        if (cum >= rank) {
          return c.getKey();
        }
      }
      return cells.lastKey();
    }

    /** Percentile value in ns (bucket midpoint); -1 when empty. */
    public long percentile(double q) {
      int b = percentileBucket(q);
      return b < 0 ? -1 : midpoint(b, subBucketBits);
    }

    public List<Integer> buckets() {
      return new ArrayList<>(cells.keySet());
    }

    public List<Long> counts() {
      return new ArrayList<>(cells.values());
    }
  }
}
