package io.wattgraph.stream.vip;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.wattgraph.stream.ServiceMappingUpdate;
import io.wattgraph.stream.Transaction;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.operators.co.CoBroadcastWithKeyedOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.streaming.util.KeyedBroadcastOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * The VIP resolvers' operator in Flink's harness, beside the operator {@code BroadcastConnectedStream}
 * makes (the one the job had): a transaction resolver holding a client record towards a two-backend
 * VIP until the watermark reaches its window's last ms (9999). The mappings' watermarks and idleness
 * must never move the operator's event time, and a checkpoint of Flink's operator restores into it.
 */
class DataTimeBroadcastOperatorTest {
  static final String VIP = "10.96.0.10:80";

  static KeyedBroadcastOperatorTestHarness<String, Transaction, ServiceMappingUpdate, Transaction> harness(
      boolean dataTime) throws Exception {
    TransactionVirtualIpResolver resolver = new TransactionVirtualIpResolver(15_000, 10_000);
    CoBroadcastWithKeyedOperator<String, Transaction, ServiceMappingUpdate, Transaction> op = dataTime
        ? new DataTimeBroadcastOperator<>(resolver, AbstractVirtualIpResolver.BROADCAST_STATES)
        : new CoBroadcastWithKeyedOperator<>(resolver, AbstractVirtualIpResolver.BROADCAST_STATES);
    return new KeyedBroadcastOperatorTestHarness<>(op, new TransactionVirtualIpResolver.ByClientEndpoint(), Types.STRING, 128, 1, 0);
  }

  /** A client record at {@code ms} towards the VIP, held for its backend. */
  static Transaction client(long ms) {
    return TransactionVirtualIpResolverTest.client(40000, ms);
  }

  /** Records as "view @ts", watermarks as "W ts", statuses as "IDLE"/"ACTIVE"; the output is cleared. */
  static List<String> out(KeyedBroadcastOperatorTestHarness<?, ?, ?, Transaction> h) {
    List<String> r = new ArrayList<>();
    for (Object o : h.getOutput()) {
      if (o instanceof StreamRecord<?> s) {
        r.add(TransactionVirtualIpResolverTest.view((Transaction) s.getValue()) + " @" + s.getTimestamp());
      } else if (o instanceof Watermark w) {
        r.add("W " + w.getTimestamp());
      } else if (o instanceof WatermarkStatus s) {
        r.add(s.isIdle() ? "IDLE" : "ACTIVE");
      }
    }
    h.getOutput().clear();
    return r;
  }

  /** The mappings at the end of time, the transactions idle after a watermark of 5000. */
  static List<String> idleTransactionsBesideMappingsAtTheEndOfTime(
      KeyedBroadcastOperatorTestHarness<String, Transaction, ServiceMappingUpdate, Transaction> h) throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processBroadcastWatermark(Long.MAX_VALUE);
    h.processElement(client(1000), 1000);
    h.processWatermark(5000);
    h.getTwoInputOperator().processWatermarkStatus1(WatermarkStatus.IDLE);
    return out(h);
  }

  @Test
  void flinksOperatorJumpsToTheEndOfTimeWhenTheDataGoesIdle() throws Exception {
    try (var h = harness(false)) {
      h.open();
      // What the job had: the record is released untranslated at once, and the edge windows
      // downstream get Long.MAX_VALUE (every later record late).
      assertEquals(List.of("W 5000", "host-a 10.1.0.5:40000>10.96.0.10:80 @9999", "W " + Long.MAX_VALUE),
          idleTransactionsBesideMappingsAtTheEndOfTime(h));
    }
  }

  @Test
  void idleDataMakesTheOperatorIdleWithoutMovingItsTime() throws Exception {
    try (var h = harness(true)) {
      h.open();
      assertEquals(List.of("W 5000", "IDLE"), idleTransactionsBesideMappingsAtTheEndOfTime(h),
          "held, and the watermark stays the transactions'");
      // The backend reports later (its record makes the input active again); the held record is
      // released from its own timer, in its own window, translated.
      h.getTwoInputOperator().processWatermarkStatus1(WatermarkStatus.ACTIVE);
      h.processElement(TransactionVirtualIpResolverTest.backend("10.2.0.8", 40000, 9000), 9000);
      h.processWatermark(9999);
      assertEquals(List.of("ACTIVE", "host-10.2.0.8 10.2.0.8:8080>10.1.0.5:40000 @9000",
          "host-a 10.1.0.5:40000>10.2.0.8:8080 @9999", "W 9999"), out(h));
    }
  }

  @Test
  void mappingsWithoutAnyWatermarkDoNotHoldTheDataBack() throws Exception {
    for (boolean dataTime : new boolean[] {false, true}) {
      try (var h = harness(dataTime)) {
        h.open();
        h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
        h.processElement(client(1000), 1000);
        h.processWatermark(9999);
        // Flink's operator waits for the mappings' watermark (the job gave them the end of time for that).
        assertEquals(dataTime ? List.of("host-a 10.1.0.5:40000>10.96.0.10:80 @9999", "W 9999") : List.of(), out(h),
            dataTime ? "this operator" : "Flink's");
      }
    }
  }

  @Test
  void aCheckpointOfFlinksOperatorRestoresIntoThisOne() throws Exception {
    OperatorSubtaskState snapshot;
    try (var before = harness(false)) {
      before.open();
      before.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
      before.processBroadcastWatermark(Long.MAX_VALUE);
      before.processElement(client(1000), 1000);
      before.processWatermark(5000);
      assertEquals(List.of("W 5000"), out(before));
      snapshot = before.snapshot(1, 1);
    }
    try (var after = harness(true)) {
      after.initializeState(snapshot);
      after.open();
      // The mappings (broadcast state), the held record (keyed state) and its timer came back.
      after.processElement(TransactionVirtualIpResolverTest.backend("10.2.0.7", 40000, 8000), 8000);
      after.processWatermark(9999);
      assertEquals(List.of("host-10.2.0.7 10.2.0.7:8080>10.1.0.5:40000 @8000",
          "host-a 10.1.0.5:40000>10.2.0.7:8080 @9999", "W 9999"), out(after));
    }
  }
}
