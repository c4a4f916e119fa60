package io.wattgraph.stream.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.window.ResourceWindowsTest;
import java.util.concurrent.TimeUnit;
import org.apache.flink.util.clock.ManualClock;
import org.junit.jupiter.api.Test;

/** {@link PerHostWatermarks}: one partition, hosts with skewed clocks, a manual activity clock. */
class PerHostWatermarksTest {
  static final long HOUR = 3_600_000;
  static final long BOUND = 5_000;
  static final long IDLE = 15_000;

  final ManualClock clock = new ManualClock(1_000_000_000L);
  final PerHostWatermarks<String[]> g = new PerHostWatermarks<>(r -> r[0], BOUND, IDLE, clock);
  final ResourceWindowsTest.Output out = new ResourceWindowsTest.Output();

  void record(String host, long ts) {
    g.onEvent(new String[] {host}, ts, out);
  }

  void emitAfter(long ms) {
    clock.advanceTime(ms, TimeUnit.MILLISECONDS);
    g.onPeriodicEmit(out);
  }

  @Test
  void aHostWhoseClockIsBehindHoldsTheWatermarkBackInsteadOfBeingLate() {
    long t = 10 * HOUR;
    record("host-a", t);
    record("host-b", t - HOUR); // same partition, an hour behind
    emitAfter(200);
    assertEquals(t - HOUR - BOUND - 1, out.last, "the lagging host's own bound");
    // host-a runs on; host-b's next records are not late: the watermark follows host-b.
    record("host-a", t + 60_000);
    record("host-b", t - HOUR + 10_000);
    emitAfter(200);
    assertEquals(t - HOUR + 10_000 - BOUND - 1, out.last);
    assertTrue(t - HOUR + 9_000 > out.last, "host-b's record 1 s older than its newest is not behind the watermark");
    // host-b stops reporting: after the idleness the watermark follows host-a alone.
    for (int i = 0; i < 74; i++) {
      record("host-a", t + 60_000 + i * 200L);
      emitAfter(200);
    }
    assertEquals(t - HOUR + 10_000 - BOUND - 1, out.last, "14.8 s without host-b: still held");
    record("host-a", t + 80_000);
    emitAfter(200);
    assertEquals(t + 80_000 - BOUND - 1, out.last, "host-b idle for 15 s: forgotten");
    assertEquals(1, g.activeHosts());
    assertFalse(out.idle);
  }

  @Test
  void watermarksNeverGoBackAndRecordsWithoutAHostAreIgnored() {
    record("host-a", 100_000);
    emitAfter(200);
    assertEquals(100_000 - BOUND - 1, out.last);
    record("host-c", 50_000); // a new host behind the watermark: its records are late
    record(null, Long.MIN_VALUE);
    emitAfter(200);
    assertEquals(100_000 - BOUND - 1, out.last, "not moved back");
    record("host-a", 200_000);
    record("host-c", 120_000);
    emitAfter(200);
    assertEquals(120_000 - BOUND - 1, out.last);
  }

  @Test
  void aPartitionWithoutRecordsOrWhoseHostsWentQuietIsIdle() {
    emitAfter(14_000);
    assertFalse(out.idle);
    emitAfter(1_000);
    assertTrue(out.idle, "no host ever: idle after the idleness, like withIdleness");
    record("host-a", 50_000);
    emitAfter(200);
    assertFalse(out.idle);
    assertEquals(50_000 - BOUND - 1, out.last);
    emitAfter(IDLE);
    assertTrue(out.idle, "its only host quiet for the idleness");
    assertEquals(0, g.activeHosts(), "and forgotten");
  }

  @Test
  void whenEveryHostWentQuietTheWatermarkMovesToTheHighestOfThem() {
    record("host-a", 100_000);
    record("host-b", 40_000);
    emitAfter(200);
    assertEquals(40_000 - BOUND - 1, out.last);
    record("host-b", 41_000);
    emitAfter(5_000); // host-a's last record 5 s ago
    emitAfter(IDLE - 4_000); // host-a quiet for longer than the idleness: forgotten, host-b holds it
    assertEquals(1, g.activeHosts());
    assertEquals(41_000 - BOUND - 1, out.last);
    emitAfter(5_000);
    assertEquals(100_000 - BOUND - 1, out.last, "host-b quiet too: host-a's windows close once nobody holds them");
    assertFalse(out.idle, "idle only after that watermark went out");
    emitAfter(200);
    assertTrue(out.idle);
  }
}
