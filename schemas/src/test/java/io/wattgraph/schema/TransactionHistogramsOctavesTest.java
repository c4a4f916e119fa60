package io.wattgraph.schema;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The exported octave buckets are unions of the scheme's buckets: folding loses no count and moves none. */
class TransactionHistogramsOctavesTest {

  private static final int S = 7;

  /** The octave bucket a duration belongs to, straight from the definition. */
  private static int octaveOfValue(long v) {
    for (int i = 0; i < TransactionHistograms.OCTAVE_BUCKETS - 1; i++) {
      if (v <= TransactionHistograms.octaveUpperBoundNs(i)) {
        return i;
      }
    }
    return TransactionHistograms.OCTAVE_BUCKETS - 1;
  }

  @Test
  void everyBucketOfTheSchemeFallsWhollyInOneOctave() {
    for (int b = 0; b < TransactionHistograms.bucketOf(1L << 40, S); b++) {
      int octave = TransactionHistograms.octaveOf(b, S);
      assertEquals(octaveOfValue(TransactionHistograms.lowerBound(b, S)), octave, "lower bound of bucket " + b);
      assertEquals(octaveOfValue(TransactionHistograms.upperBound(b, S)), octave, "upper bound of bucket " + b);
    }
  }

  @Test
  void foldsKnownDurationsIntoTheirOctaves() {
    long[] durations = {1, 4_095, 4_096, 8_191, 8_192, 1_000_000, 1_048_575, 1_048_576, (1L << 34) - 1, 1L << 34,
        3_600_000_000_000L};
    TransactionHistograms.Histogram h = new TransactionHistograms.Histogram(S);
    for (long d : durations) {
      h.add(java.util.List.of(TransactionHistograms.bucketOf(d, S)), java.util.List.of(1L));
    }
    long[] octaves = TransactionHistograms.octaveCounts(h.buckets().stream().mapToInt(Integer::intValue).toArray(),
        h.counts().stream().mapToLong(Long::longValue).toArray(), S);
    long[] expected = new long[TransactionHistograms.OCTAVE_BUCKETS];
    expected[0] = 2; // 1 ns and 4095 ns: below 2^12
    expected[1] = 2; // 4096 and 8191
    expected[2] = 1; // 8192
    expected[8] = 2; // 1,000,000 and 1,048,575 (2^19 .. 2^20 - 1)
    expected[9] = 1; // 2^20
    expected[22] = 1; // 2^34 - 1
    expected[23] = 2; // 2^34 and an hour
    assertArrayEquals(expected, octaves);
  }

  @Test
  void boundsAreThePowersOfTwo() {
    assertEquals(4_095, TransactionHistograms.octaveUpperBoundNs(0));
    assertEquals((1L << 34) - 1, TransactionHistograms.octaveUpperBoundNs(TransactionHistograms.OCTAVE_BUCKETS - 2));
    assertThrows(IllegalArgumentException.class,
        () -> TransactionHistograms.octaveUpperBoundNs(TransactionHistograms.OCTAVE_BUCKETS - 1));
  }
}
