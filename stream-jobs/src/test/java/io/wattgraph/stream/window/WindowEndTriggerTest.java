package io.wattgraph.stream.window;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.source.Decoded;
import io.wattgraph.stream.source.Sample;
import java.util.List;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * The production entity window operator restored from a checkpoint written with another allowed
 * lateness (as when the default went from 30 s to 5 min): its open windows take late inputs for the
 * new lateness and are then cleared. Flink's own trigger left such a window in state for good: its
 * cleanup timer, at the old lateness, no longer matched the operator's cleanup time.
 */
class WindowEndTriggerTest {
  static final long T0 = ResourceWindowsTest.T0;

  static KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> harness(long latenessMs)
      throws Exception {
    return WindowHarness.of(CorrelationJob::entityWindows, MetricInput.class, new EntityWindowAggregate.ByWindowKey(),
        WindowHarness.config(latenessMs));
  }

  /** The PROCESS sample ending at T0 + endS seconds, as the pipeline feeds it (event time = its end − 1 ns). */
  static void feed(KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> h, double endS, long cpuNs)
      throws Exception {
    Decoded<Sample> d = Decoded.ok(ResourceWindowsTest.process(endS, cpuNs, 1.0, 1));
    h.processElement(new StreamRecord<>(MetricInput.of(d.value, MetricInput.PROCESS, ResourceWindowsTest.P),
        d.eventTimeMs(Sample::eventTimeMs)));
  }

  /** The window [T0, T0 + 10 s) with one sample, fired, checkpointed by an operator of {@code latenessMs}. */
  static OperatorSubtaskState firedWindow(long latenessMs) throws Exception {
    try (var before = harness(latenessMs)) {
      before.open();
      feed(before, 5, 100);
      before.processWatermark(T0 + 10_000);
      assertEquals(List.of("0:100"), rows(before), "fired at its end");
      return before.snapshot(1, 1);
    }
  }

  static List<String> rows(KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> h) {
    return h.extractOutputValues().stream().map(r -> r.revision + ":" + Math.round(r.cpuSeconds * 1e9)).toList();
  }

  @Test
  void aLongerLatenessKeepsTheRestoredWindowOpenThatLongAndThenClearsIt() throws Exception {
    OperatorSubtaskState snapshot = firedWindow(30_000);
    try (var after = harness(300_000)) {
      after.initializeState(snapshot);
      after.open();
      after.processWatermark(T0 + 60_000); // past the old lateness
      feed(after, 6, 20);
      assertEquals(List.of("1:120"), rows(after), "a late input within the new lateness revises the window");
      after.processWatermark(T0 + 10_000 + 300_000);
      assertEquals(0, after.numKeyedStateEntries(), "the window's state cleared at the new lateness");
      assertEquals(0, after.numEventTimeTimers());
    }
  }

  @Test
  void aRestoredWindowWithoutFurtherInputIsClearedAtTheNewLateness() throws Exception {
    for (long[] lateness : new long[][] {{30_000, 300_000}, {300_000, 30_000}}) {
      OperatorSubtaskState snapshot = firedWindow(lateness[0]);
      try (var after = harness(lateness[1])) {
        after.initializeState(snapshot);
        after.open();
        after.processWatermark(T0 + 10_000 + Math.max(lateness[0], lateness[1]));
        assertEquals(0, after.numKeyedStateEntries(), "restored with " + lateness[1] + " ms after " + lateness[0]);
        assertEquals(0, after.numEventTimeTimers());
      }
    }
  }
}
