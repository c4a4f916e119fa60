package io.wattgraph.graph.export;

import io.wattgraph.schema.TransactionHistograms;
import java.util.List;

/**
 * A latency histogram as exported: the count in each octave bucket of {@link TransactionHistograms} (not cumulative;
 * the last bucket unbounded) and the sum of the durations (s, from the buckets' midpoints), both totals over windows.
 */
public record ExportedHistogram(long[] counts, double sumSeconds) {

    /** Upper bounds (s, inclusive) of the buckets, the last +Inf: the powers of two 2^12..2^34 ns, less 1 ns. */
    public static final double[] UPPER_BOUNDS_SECONDS = upperBounds();

    /** Series of one histogram on a scrape: its buckets, {@code _sum} and {@code _count}. */
    public static final int SERIES = TransactionHistograms.OCTAVE_BUCKETS + 2;

    public ExportedHistogram {
        if (counts.length != TransactionHistograms.OCTAVE_BUCKETS) {
            throw new IllegalArgumentException("a latency histogram has " + TransactionHistograms.OCTAVE_BUCKETS
                    + " octave buckets, not " + counts.length);
        }
    }

    /** The graph's {@code <h>OctaveTotals} and {@code <h>SumNsTotal}; null when absent or not an octave list. */
    static ExportedHistogram of(List<Object> octaveTotals, Double sumNs) {
        if (octaveTotals == null || octaveTotals.size() != TransactionHistograms.OCTAVE_BUCKETS) {
            return null;
        }
        long[] counts = new long[octaveTotals.size()];
        for (int i = 0; i < counts.length; i++) {
            if (!(octaveTotals.get(i) instanceof Number n)) {
                return null;
            }
            counts[i] = n.longValue();
        }
        return new ExportedHistogram(counts, sumNs == null ? 0 : sumNs / 1e9);
    }

    public long count() {
        long n = 0;
        for (long c : counts) {
            n += c;
        }
        return n;
    }

    private static double[] upperBounds() {
        double[] b = new double[TransactionHistograms.OCTAVE_BUCKETS];
        for (int i = 0; i < b.length - 1; i++) {
            b[i] = TransactionHistograms.octaveUpperBoundNs(i) / 1e9;
        }
        b[b.length - 1] = Double.POSITIVE_INFINITY;
        return b;
    }
}
