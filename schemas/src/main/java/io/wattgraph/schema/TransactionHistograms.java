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

  /**
   * Octave buckets for exported histograms: powers of two, the major bounds of this scheme (no bucket
   * of it straddles {@code 2^k} for {@code k > s}, so folding into them is exact). Bucket 0 holds
   * durations below {@code 2^OCTAVE_MIN} ns, bucket {@code i} those in
   * {@code [2^(OCTAVE_MIN+i-1), 2^(OCTAVE_MIN+i))}, the last those from {@code 2^OCTAVE_MAX} ns up.
   * 4.1 µs to 17.2 s: below, a request is not measurable through the kernel; above, it is a timeout.
   */
  public static final int OCTAVE_MIN = 12;
  public static final int OCTAVE_MAX = 34;
  /** Number of octave buckets, the last one unbounded. */
  public static final int OCTAVE_BUCKETS = OCTAVE_MAX - OCTAVE_MIN + 2;

  /** Largest duration (ns, inclusive) of octave bucket {@code i < OCTAVE_BUCKETS - 1}. */
  public static long octaveUpperBoundNs(int i) {
    if (i < 0 || i >= OCTAVE_BUCKETS - 1) {
      throw new IllegalArgumentException("octave bucket " + i + " has no upper bound (0.." + (OCTAVE_BUCKETS - 2) + ")");
    }
    return (1L << (OCTAVE_MIN + i)) - 1;
  }

  /** Octave bucket of a bucket of this scheme (all its values fall in it). */
  public static int octaveOf(int b, int s) {
    if (s >= OCTAVE_MIN) {
      throw new IllegalArgumentException("subBucketBits " + s + " straddles the octave bounds (below " + OCTAVE_MIN + ")");
    }
    long lo = lowerBound(b, s);
    if (lo < (1L << OCTAVE_MIN)) {
      return 0;
    }
    return Math.min(OCTAVE_BUCKETS - 1, 63 - Long.numberOfLeadingZeros(lo) - OCTAVE_MIN + 1);
  }

  /** A histogram's counts folded into the octave buckets ({@link #OCTAVE_BUCKETS} long). */
  public static long[] octaveCounts(int[] buckets, long[] counts, int s) {
    if (buckets.length != counts.length) {
      throw new IllegalArgumentException("bucket and count arrays differ in length");
    }
    long[] out = new long[OCTAVE_BUCKETS];
    for (int i = 0; i < buckets.length; i++) {
      out[octaveOf(buckets[i], s)] += counts[i];
    }
    return out;
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
