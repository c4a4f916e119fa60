package io.wattgraph.stream.window;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.transaction.TransactionInputCombinerTest;
import org.junit.jupiter.api.Test;

/**
 * Each source record beyond the lateness is counted once, whichever inputs it became: a sample's
 * POD input repeats its GROUP input, a TransactionStats record's other levels repeat its PROCESS
 * input, and a combined PROCESS input stands for all its records.
 */
class LateSampleCounterTest {

  @Test
  void countsEverySourceRecordOnce() {
    LateSampleCounter<MetricInput> counter = LateSampleCounter.windowInputs();
    for (String level : new String[] {MetricInput.PROCESS, MetricInput.GROUP, MetricInput.HOST, MetricInput.NAMESPACE}) {
      assertEquals(1, counter.records(sample(level)), level + " sample");
    }
    assertEquals(0, counter.records(sample(MetricInput.POD)), "a POD sample input repeats its GROUP input");

    Transaction t = TransactionInputCombinerTest.tx("CLIENT", 1000, 1, 1);
    assertEquals(1, counter.records(MetricInput.ofTransaction(t, MetricInput.PROCESS, "h/1/1", "g", "p")));
    for (String level : new String[] {MetricInput.GROUP, MetricInput.POD, MetricInput.NAMESPACE, MetricInput.HOST}) {
      assertEquals(0, counter.records(MetricInput.ofTransaction(t, level, "x", "g", "p")), level + " transaction");
    }

    var r = new TransactionInputCombinerTest.Recorder(100);
    for (int i = 0; i < 3; i++) {
      r.processElement(MetricInput.ofTransaction(TransactionInputCombinerTest.tx("CLIENT", 1000 + i, 1, 1),
          MetricInput.PROCESS, "h/1/1", "g", null), 1000 + i);
      r.processElement(MetricInput.ofTransaction(TransactionInputCombinerTest.tx("CLIENT", 1000 + i, 1, 1),
          MetricInput.HOST, "h", null, null), 1000 + i);
    }
    r.flush();
    MetricInput process = TransactionInputCombinerTest.record(r.getOutput().poll()).getValue();
    MetricInput host = TransactionInputCombinerTest.record(r.getOutput().poll()).getValue();
    assertEquals(3, counter.records(process), "a combined PROCESS input counts its records");
    assertEquals(0, counter.records(host));

    assertEquals(1, LateSampleCounter.edgeInputs().records(new EdgeInput()));
  }

  private static MetricInput sample(String level) {
    MetricInput m = new MetricInput();
    m.level = level;
    m.hostId = "h";
    m.entityId = "e";
    return m;
  }
}
