package io.wattgraph.stream.window;

/**
 * Mean and nearest-rank percentiles (ns) read off a merged {@code LatencyHistogram}, each value the
 * midpoint of its bucket: within 2^-(s+1) (0.39 % for s = 7) of the true value, exact below
 * 2^(s+1) ns. All null for an empty histogram. A Flink POJO.
 *
 * <p>{@code octaves}: the histogram's counts in the octave buckets of {@code TransactionHistograms}
 * (exact: unions of the agent's buckets) and {@code sumNs} the sum of the bucket midpoints, for the
 * exported histograms.
 */
public class LatencyStats {
  public Double meanNs;
  public Long p50Ns;
  public Long p75Ns;
  public Long p90Ns;
  public Long p99Ns;
  public long[] octaves;
  public Double sumNs;

  public LatencyStats() {}
}
