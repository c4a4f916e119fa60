package io.wattgraph.stream.window;

import static io.wattgraph.stream.source.CgroupRecords.MIB;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.CgroupStats;
import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.source.CgroupRecords;
import io.wattgraph.stream.source.CgroupSample;
import io.wattgraph.stream.source.CgroupStatsDeserializer;
import io.wattgraph.stream.source.Decoded;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The production container window operator ({@link CorrelationJob#containerWindows}) in Flink's
 * operator harness, fed through the production deserializer: window 10 s, lateness 5 s, watermarks
 * by hand; every expected figure worked out by hand.
 */
class CgroupWindowsTest {
  static final long T0 = 1_700_000_000_000L;
  static final long S = 1_000_000_000L;
  static final long T0_NS = T0 * 1_000_000L;
  static final String C1 = "c1".repeat(32);
  static final String C2 = "c2".repeat(32);

  KeyedOneInputStreamOperatorTestHarness<String, CgroupSample, CgroupRow> h;

  @BeforeEach
  void setUp() throws Exception {
    h = WindowHarness.open(CorrelationJob::containerWindows, CgroupSample.class, new CgroupWindowAggregate.ByContainer(),
        WindowHarness.config(5_000));
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
  }

  static List<Decoded<CgroupSample>> decode(byte[] value) {
    List<Decoded<CgroupSample>> out = new ArrayList<>();
    new CgroupStatsDeserializer().deserialize(new ConsumerRecord<>("wattgraph.cgroups", 0, 7L, "h1".getBytes(), value),
        new ResourceWindowsTest.ListCollector<>(out));
    return out;
  }

  /** Through the deserializer (record id from the bytes) into the window operator at its event time. */
  void send(CgroupStats s) throws Exception {
    Decoded<CgroupSample> d = decode(CgroupRecords.encode(s)).get(0);
    assertNull(d.deadLetter, () -> "dead letter " + d.deadLetter);
    h.processElement(new StreamRecord<>(d.value, d.eventTimeMs(CgroupSample::eventTimeMs)));
  }

  List<CgroupRow> rows() {
    List<CgroupRow> out = new ArrayList<>();
    for (Object o : h.extractOutputValues()) {
      out.add((CgroupRow) o);
    }
    h.getOutput().clear();
    return out;
  }

  int late() {
    return h.getSideOutput(CorrelationJob.LATE_CGROUPS) == null ? 0 : h.getSideOutput(CorrelationJob.LATE_CGROUPS).size();
  }

  static CgroupStats first() {
    return CgroupRecords.stats("h1", C1, T0_NS, T0_NS + 5 * S).setCpuNs(2 * S).setCpuPeakCores(1.5)
        .setThrottledPeriods(3).setThrottledNs(250_000_000L).setMemoryBytes(300 * MIB).setMemoryPeakBytes(400 * MIB)
        .setIoReadBytes(4096).setIoWriteBytes(8192).setPids(7).setTicks(50).setMaxTickGapNs(12_000_000L)
        .setPodUid("11111111-2222-3333-4444-555555555555").setPodName("shop-0").setPodNamespace("shop")
        .setPodLabels(Map.of("app", "shop")).build();
  }

  static CgroupStats second() {
    // Ends exactly on the window's end: it belongs to the window it ends.
    return CgroupRecords.stats("h1", C1, T0_NS + 5 * S, T0_NS + 10 * S).setCpuNs(3 * S).setCpuPeakCores(2.25)
        .setThrottledPeriods(5).setThrottledNs(500_000_000L).setMemoryBytes(200 * MIB).setMemoryPeakBytes(350 * MIB)
        .setIoReadBytes(1000).setPids(9).setTicks(50).setMaxTickGapNs(30_000_000L).build();
  }

  @Test
  void peaksSumsLastAndMeanOfAContainersWindowExactly() throws Exception {
    // Out of order, and the second record twice (an agent's replay: skipped).
    send(second());
    send(first());
    send(second());
    h.processWatermark(T0 + 9_998);
    assertEquals(List.of(), rows());
    h.processWatermark(T0 + 9_999);
    List<CgroupRow> rows = rows();
    assertEquals(1, rows.size(), () -> "rows " + rows);
    CgroupRow r = rows.get(0);
    assertEquals("h1|" + C1, r.key());
    assertEquals(T0_NS, r.windowStartNs);
    assertEquals(T0_NS + 10 * S, r.windowEndNs);
    assertEquals(0, r.revision);
    assertEquals(2, r.samples);
    assertEquals(100, r.ticks);
    assertEquals(30_000_000L, r.maxTickGapNs);
    assertEquals(0.5, r.cpuMeanCores); // 5 s of CPU in a 10 s window
    assertEquals(2.25, r.cpuPeakCores);
    assertEquals(0.75, r.throttledSeconds);
    assertEquals(8, r.throttledPeriods);
    assertEquals(400 * MIB, r.memoryPeakBytes);
    assertEquals(200 * MIB, r.memoryLastBytes); // the latest interval's, not the last to arrive
    assertEquals(250.0 * MIB, r.memoryMeanBytes);
    assertEquals(5096, r.ioReadBytes);
    assertEquals(8192, r.ioWriteBytes);
    assertEquals(9, r.pids);
    assertEquals("11111111-2222-3333-4444-555555555555", r.podUid);
    assertEquals("shop-0", r.pod.name);
    assertEquals("shop", r.pod.namespace);
    assertEquals(List.of("app=shop"), List.of(r.pod.labels));
  }

  @Test
  void aLateRecordRevisesItsWindowAndOneBeyondTheLatenessIsCountedNotAdded() throws Exception {
    send(first());
    send(second());
    send(CgroupRecords.stats("h1", C2, T0_NS + 2 * S, T0_NS + 3 * S).setCpuNs(S / 4).setCpuPeakCores(0.5)
        .setMemoryBytes(64 * MIB).setMemoryPeakBytes(64 * MIB).setTicks(10).build());
    h.processWatermark(T0 + 10_000);
    List<CgroupRow> first = rows();
    assertEquals(2, first.size(), () -> "rows " + first);
    CgroupRow c2 = first.stream().filter(r -> r.groupId.equals(C2)).findFirst().orElseThrow();
    assertEquals(0.025, c2.cpuMeanCores);
    assertEquals(64 * MIB, c2.memoryPeakBytes);
    assertEquals(0.0, c2.throttledSeconds);

    // Within the lateness: a higher memory peak, an interval that ends before the latest one.
    h.processWatermark(T0 + 14_000);
    send(CgroupRecords.stats("h1", C1, T0_NS + 6 * S, T0_NS + 7 * S).setCpuNs(S).setCpuPeakCores(1.0)
        .setMemoryBytes(100 * MIB).setMemoryPeakBytes(500 * MIB).setThrottledNs(S / 4).setThrottledPeriods(1)
        .setTicks(10).build());
    List<CgroupRow> revised = rows();
    assertEquals(1, revised.size(), () -> "rows " + revised);
    CgroupRow r = revised.get(0);
    assertEquals(C1, r.groupId);
    assertEquals(1, r.revision);
    assertEquals(3, r.samples);
    assertEquals(0.6, r.cpuMeanCores);
    assertEquals(2.25, r.cpuPeakCores);
    assertEquals(1.0, r.throttledSeconds);
    assertEquals(9, r.throttledPeriods);
    assertEquals(500 * MIB, r.memoryPeakBytes);
    assertEquals(200 * MIB, r.memoryLastBytes);
    assertEquals(200.0 * MIB, r.memoryMeanBytes);

    // Past the window's end plus the lateness: to the late side output, no row.
    h.processWatermark(T0 + 15_000);
    send(CgroupRecords.stats("h1", C1, T0_NS + 8 * S, T0_NS + 9 * S).setCpuNs(S).setTicks(10).build());
    assertEquals(List.of(), rows());
    assertEquals(1, late());
  }

  @Test
  void badRecordsBecomeDeadLettersNamingWhy() {
    assertEquals("undecodable: null value", decode(null).get(0).deadLetter.reason);
    assertTrue(decode(new byte[] {1, 2, 3}).get(0).deadLetter.reason.startsWith("undecodable: "));
    assertEquals("invalid: empty groupId",
        decode(CgroupRecords.encode(CgroupRecords.stats("h1", "", T0_NS, T0_NS + S).build())).get(0).deadLetter.reason);
    assertEquals("invalid: interval " + (T0_NS + S) + ".." + (T0_NS + S) + " is empty or negative",
        decode(CgroupRecords.encode(CgroupRecords.stats("h1", C1, T0_NS + S, T0_NS + S).build()))
            .get(0).deadLetter.reason);
    assertEquals("invalid: negative count or size -1 (cpuNs, throttled, memory, io, pids, ticks)",
        decode(CgroupRecords.encode(CgroupRecords.stats("h1", C1, T0_NS, T0_NS + S).setMemoryBytes(-1).build()))
            .get(0).deadLetter.reason);
    assertEquals("invalid: cpuPeakCores NaN",
        decode(CgroupRecords.encode(CgroupRecords.stats("h1", C1, T0_NS, T0_NS + S).setCpuPeakCores(Double.NaN)
            .build())).get(0).deadLetter.reason);
  }
}
