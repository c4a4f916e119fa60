package io.wattgraph.stream.transaction;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.HttpRoute;
import io.wattgraph.stream.MetricsAccumulator;
import io.wattgraph.stream.NamespaceAccumulator;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.window.MetricInput;
import io.wattgraph.stream.window.TransactionMathTest;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.util.OutputTag;
import org.junit.jupiter.api.Test;

/**
 * {@link TransactionInputCombiner} (window 10 s) in front of an output that records what reaches
 * it: what it emits and when, and that the windows' state built from its combined inputs is, byte
 * for byte, the state built from the records one by one. Then {@link ProcessGroupsOperator} in
 * Flink's harness: the combiner on ProcessGroups' output, flushed by watermarks after the timers
 * released what waited, and before checkpoint barriers.
 */
public class TransactionInputCombinerTest {

  @Test
  void combinesPerKeyGroupPodAndWindowAndHoldsNothingAcrossAWatermark() throws Exception {
    var h = new Recorder(100);
    h.processElement(input(MetricInput.HOST, "h1", "h1", "g", "p", tx("CLIENT", 1500, 2, 10)), 1500);
    h.processElement(input(MetricInput.GROUP, "h1", "g", "g", "p", tx("SERVER", 1600, 3, 20)), 1600);
    h.processElement(input(MetricInput.PROCESS, "h1", "h1/1/1", "g", "p", tx("SERVER", 1700, 4, 30)), 1700);
    h.processElement(input(MetricInput.PROCESS, "h1", "h1/1/1", "g2", null, tx("SERVER", 1800, 4, 30)), 1800);
    h.processElement(input(MetricInput.HOST, "h1", "h1", "g", "p", tx("SERVER", 2500, 5, 10)), 2500);
    // Same key and group, next window.
    h.processElement(input(MetricInput.HOST, "h1", "h1", "g", "p", tx("CLIENT", 10_500, 7, 10)), 10_500);
    assertTrue(h.getOutput().isEmpty(), "nothing goes out before a watermark");

    h.processWatermark(new Watermark(5000));
    List<Object> out = new ArrayList<>(h.getOutput());
    // Every buffered input, in the order of its first record, then the watermark.
    assertEquals(6, out.size(), out.toString());
    assertEquals(new Watermark(5000), out.get(5));
    MetricInput host = record(out.get(0)).getValue();
    assertEquals("HOST|h1|h1", host.key());
    assertEquals(2500, record(out.get(0)).getTimestamp(), "the latest of its records' times");
    assertNull(host.transaction);
    assertEquals(2, host.transactions.records);
    assertEquals(2, host.transactions.clientTransactions);
    assertEquals(5, host.transactions.serverTransactions);
    assertArrayEquals(new int[] {10}, host.transactions.clientRtt.buckets);
    assertArrayEquals(new long[] {5}, host.transactions.serverTime.counts);
    assertEquals("GROUP|h1|g", record(out.get(1)).getValue().key());
    // A process whose group changed within the window: one input per group.
    assertEquals(List.of("g", "g2"), List.of(record(out.get(2)).getValue().groupId, record(out.get(3)).getValue().groupId));
    assertEquals(List.of(1, 1), List.of(record(out.get(2)).getValue().transactionRecords(),
        record(out.get(3)).getValue().transactionRecords()));
    assertEquals("HOST|h1|h1", record(out.get(4)).getValue().key());
    assertEquals(10_500, record(out.get(4)).getTimestamp());
    assertEquals(7, record(out.get(4)).getValue().transactions.clientTransactions);
  }

  @Test
  void samplesPassAtOnceAndTheBufferIsFlushedOnDemandWhenIdleAndWhenFull() throws Exception {
    var h = new Recorder(2);
    MetricInput sample = new MetricInput();
    sample.level = MetricInput.HOST;
    sample.hostId = "h1";
    sample.entityId = "h1";
    h.processElement(sample, 1000);
    assertEquals(1, h.getOutput().size());
    MetricInput passed = record(h.getOutput().poll()).getValue();
    assertEquals("HOST|h1|h1", passed.key());
    assertEquals(0, passed.transactionRecords());

    h.processElement(input(MetricInput.HOST, "h1", "h1", null, null, tx("CLIENT", 1000, 1, 1)), 1000);
    assertEquals(0, h.getOutput().size());
    h.flush();
    assertEquals(1, h.getOutput().size());
    h.getOutput().clear();

    h.processElement(input(MetricInput.HOST, "h1", "h1", null, null, tx("CLIENT", 1000, 1, 1)), 1000);
    h.processWatermarkStatus(WatermarkStatus.IDLE);
    assertEquals(2, h.getOutput().size(), "flushed, then the idle status");
    assertInstanceOf(WatermarkStatus.class, new ArrayList<>(h.getOutput()).get(1));
    h.getOutput().clear();

    // Bound of 2: a third combination sends the first two on.
    h.processElement(input(MetricInput.HOST, "h1", "h1", null, null, tx("CLIENT", 1000, 1, 1)), 1000);
    h.processElement(input(MetricInput.HOST, "h2", "h2", null, null, tx("CLIENT", 1000, 1, 1)), 1000);
    assertEquals(0, h.getOutput().size());
    h.processElement(input(MetricInput.HOST, "h3", "h3", null, null, tx("CLIENT", 1000, 1, 1)), 1000);
    assertEquals(2, h.getOutput().size());
    h.getOutput().clear();
  }

  /**
   * Records of several keys, groups, roles, windows and HTTP routes, in a random order with
   * watermarks in between: the entity and namespace windows' accumulators (serialized with the
   * job's serializer) are the same whether each record is added or the combined inputs are.
   */
  @Test
  void windowStateFromCombinedInputsEqualsStateFromEveryRecord() throws Exception {
    Random random = new Random(42);
    var h = new Recorder(7);
    Map<String, MetricsAccumulator> raw = new LinkedHashMap<>();
    Map<String, NamespaceAccumulator> rawNs = new LinkedHashMap<>();
    long watermark = Long.MIN_VALUE;
    // First, a window whose identity comes from different records: group g1 from the first, comm
    // "b" from the second (same group), though a third of another group came with a comm first.
    String[][] identities = {{"g1", null}, {"g1", "b"}, {"g2", "a"}, {"g1", "c"}};
    for (String[] id : identities) {
      Transaction t = tx("CLIENT", 500, 1, 1);
      t.comm = id[1];
      MetricInput in = input(MetricInput.PROCESS, "h9", "h9/1/1", id[0], null, t);
      raw.computeIfAbsent(in.key() + "@0", k -> new MetricsAccumulator()).add(in);
      h.processElement(in, 500);
    }
    for (int i = 0; i < 2_000; i++) {
      long ms = 1000 + random.nextInt(30_000);
      String host = "h" + random.nextInt(3);
      String group = random.nextInt(5) == 0 ? null : "g" + random.nextInt(3);
      String pod = group == null || random.nextBoolean() ? null : "pod-" + group;
      String[] levels = {MetricInput.PROCESS, MetricInput.GROUP, MetricInput.POD, MetricInput.HOST,
          MetricInput.NAMESPACE};
      String level = levels[random.nextInt(levels.length)];
      String entity = switch (level) {
        case MetricInput.PROCESS -> host + "/" + random.nextInt(4) + "/1";
        case MetricInput.GROUP -> group == null ? "none" : group;
        case MetricInput.POD -> pod == null ? "none" : pod;
        case MetricInput.NAMESPACE -> "ns" + random.nextInt(2);
        default -> host;
      };
      Transaction t = tx(random.nextBoolean() ? "CLIENT" : "SERVER", ms, 1 + random.nextInt(50), random.nextInt(40));
      if (random.nextInt(3) == 0) {
        t.httpRoutes = new HttpRoute[] {HttpRoute.of(t.role, "GET", "/r" + random.nextInt(3), false, t.transactions,
            t.buckets, t.counts)};
      }
      t.comm = random.nextInt(4) == 0 ? null : "c" + random.nextInt(2);
      MetricInput in = input(level, host, entity, group, pod, t);
      String windowKey = in.key() + "@" + ms / 10_000;
      if (in.isNamespace()) {
        rawNs.computeIfAbsent(windowKey, k -> new NamespaceAccumulator()).add(in);
      } else {
        raw.computeIfAbsent(windowKey, k -> new MetricsAccumulator()).add(in);
      }
      h.processElement(in, ms);
      if (random.nextInt(100) == 0) {
        // Watermarks within the bounded disorder of the generated times: the order changes, nothing is late.
        watermark = Math.max(watermark, ms - 40_000);
        h.processWatermark(new Watermark(watermark));
      }
    }
    h.flush(); // the end
    Map<String, MetricsAccumulator> combined = new LinkedHashMap<>();
    Map<String, NamespaceAccumulator> combinedNs = new LinkedHashMap<>();
    int inputs = 0;
    for (Object o : h.getOutput()) {
      if (!(o instanceof StreamRecord<?>)) {
        continue;
      }
      inputs++;
      StreamRecord<MetricInput> r = record(o);
      MetricInput in = r.getValue();
      String windowKey = in.key() + "@" + r.getTimestamp() / 10_000;
      if (in.isNamespace()) {
        assertNull(in.httpRoutes, "namespace windows keep no routes");
        combinedNs.computeIfAbsent(windowKey, k -> new NamespaceAccumulator()).add(in);
      } else {
        combined.computeIfAbsent(windowKey, k -> new MetricsAccumulator()).add(in);
      }
    }
    assertTrue(inputs < 2_000, "combined: " + inputs);
    assertSameState(raw, combined, MetricsAccumulator.class);
    assertSameState(rawNs, combinedNs, NamespaceAccumulator.class);
  }

  @Test
  void processGroupsOperatorCombinesItsOutputAndFlushesAfterTimersBeforeBarriersAndAtTheEnd() throws Exception {
    var h = new KeyedTwoInputStreamOperatorTestHarness<String, MetricInput, Transaction, MetricInput>(
        new ProcessGroupsOperator(new ProcessGroups(3_600_000, 10_000, 30_000), 10_000, 1000), new ProcessGroups.ByEntity(),
        new ProcessGroups.ByProcess(), Types.STRING);
    h.open();
    // Not known yet: waits in ProcessGroups for the watermark to reach 9999.
    h.processElement2(new StreamRecord<>(TransactionJoinsTest.server(1000), 1000));
    h.processElement1(new StreamRecord<>(TransactionJoinsTest.processSample("c", "pod-x"), 1000));
    // Known now: on at once, into the combiner.
    h.processElement2(new StreamRecord<>(TransactionJoinsTest.server(1500), 1500));
    h.processElement2(new StreamRecord<>(TransactionJoinsTest.server(2000), 2000));
    assertEquals(0, h.getOutput().size());
    h.processWatermark1(new Watermark(9999));
    h.processWatermark2(new Watermark(9999));
    List<Object> out = new ArrayList<>(h.getOutput());
    // The released record and the two others, one input per level, all before the watermark.
    assertEquals(List.of("PROCESS|host-b|" + TransactionJoinsTest.P, "GROUP|host-b|c", "POD|host-b|pod-x",
        "HOST|host-b|host-b"), out.subList(0, 4).stream().map(o -> record(o).getValue().key()).toList());
    assertTrue(out.subList(0, 4).stream().allMatch(o -> record(o).getValue().transactionRecords() == 3), out.toString());
    assertEquals(9999, record(out.get(0)).getTimestamp());
    assertEquals(new Watermark(9999), out.get(4));
    h.getOutput().clear();

    h.processElement2(new StreamRecord<>(TransactionJoinsTest.server(12_000), 12_000));
    assertEquals(0, h.getOutput().size());
    h.prepareSnapshotPreBarrier(1);
    assertEquals(4, h.getOutput().size(), "a checkpoint barrier must not pass buffered inputs");
    h.getOutput().clear();

    // Received: 4 records x 4 levels; sent: 2 flushes x 4 combined inputs.
    ProcessGroupsOperator op = (ProcessGroupsOperator) h.getOperator();
    assertEquals(16, op.combiner().received());
    assertEquals(8, op.combiner().sent());
    h.processElement2(new StreamRecord<>(TransactionJoinsTest.server(13_000), 13_000));
    h.endInput1();
    h.endInput2();
    h.close();
    assertEquals(4, h.getOutput().size(), "the end flushes the rest");
    assertEquals(20, op.combiner().received());
    assertEquals(12, op.combiner().sent());
  }

  private static <A> void assertSameState(Map<String, A> expected, Map<String, A> actual, Class<A> type)
      throws Exception {
    assertEquals(expected.keySet(), actual.keySet());
    TypeSerializer<A> s = TypeInformation.of(type).createSerializer(new SerializerConfigImpl());
    for (String k : expected.keySet()) {
      assertArrayEquals(bytes(s, expected.get(k)), bytes(s, actual.get(k)), k);
    }
  }

  private static <A> byte[] bytes(TypeSerializer<A> s, A a) throws Exception {
    DataOutputSerializer out = new DataOutputSerializer(256);
    s.serialize(a, out);
    return out.getCopyOfBuffer();
  }

  /** A combiner and what reached the output behind it, as the test harnesses present it. */
  public static final class Recorder {
    final Queue<Object> out = new ArrayDeque<>();
    final TransactionInputCombiner combiner;

    public Recorder(int maxKeys) {
      combiner = new TransactionInputCombiner(new Output<>() {
        @Override
        public void collect(StreamRecord<MetricInput> r) {
          // Copied, as the record object may be reused by the caller.
          out.add(new StreamRecord<>(r.getValue(), r.getTimestamp()));
        }

        @Override
        public void emitWatermark(Watermark mark) {
          out.add(mark);
        }

        @Override
        public void emitWatermarkStatus(WatermarkStatus status) {
          out.add(status);
        }

        @Override
        public <X> void collect(OutputTag<X> tag, StreamRecord<X> record) {
          out.add(record);
        }

        @Override
        public void emitLatencyMarker(LatencyMarker marker) {}

        @Override
        public void emitRecordAttributes(RecordAttributes attributes) {}

        @Override
        public void emitWatermark(WatermarkEvent event) {}

        @Override
        public void close() {}
      }, 10_000, maxKeys);
    }

    public void processElement(MetricInput in, long ts) {
      combiner.collect(new StreamRecord<>(in, ts));
    }

    void processWatermark(Watermark mark) {
      combiner.emitWatermark(mark);
    }

    void processWatermarkStatus(WatermarkStatus status) {
      combiner.emitWatermarkStatus(status);
    }

    public Queue<Object> getOutput() {
      return out;
    }

    /** What ProcessGroupsOperator does before a checkpoint barrier and at the end. */
    public void flush() {
      combiner.flush();
    }
  }

  static MetricInput input(String level, String host, String entity, String group, String pod, Transaction t) {
    t.hostId = host;
    return MetricInput.ofTransaction(t, level, entity, group, pod);
  }

  /** n transactions at {@code ms}, all in one latency bucket. */
  public static Transaction tx(String role, long ms, long n, int bucket) {
    Transaction t = TransactionMathTest.tx(role, n, new int[] {bucket}, new long[] {n});
    t.intervalEndNs = ms * 1_000_000L;
    t.intervalStartNs = t.intervalEndNs - 1_000_000_000L;
    return t;
  }

  @SuppressWarnings("unchecked")
  public static StreamRecord<MetricInput> record(Object o) {
    return (StreamRecord<MetricInput>) o;
  }
}
