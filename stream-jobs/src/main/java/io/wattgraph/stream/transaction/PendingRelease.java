package io.wattgraph.stream.transaction;

import io.wattgraph.stream.Transaction;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.state.ListState;

/**
 * Holding a TransactionStats record back until the last moment it can still count in its window:
 * until the watermark reaches the window's last millisecond. By then every record of the same
 * window (the process's ResourceSample, the connection's other end) has arrived unless it is late
 * for the window itself, however disordered within the window the records came. Released from an
 * event-time timer at that millisecond, so the emitted record carries it as its timestamp (Flink
 * stamps timer output with the timer's time): still inside the record's window, and not late, since
 * the timer fires before the watermark is passed on to the window operator.
 */
public final class PendingRelease {
  private PendingRelease() {}

  /** The last ms of the tumbling window (epoch-aligned, {@code windowMs}) holding event time {@code ts}. */
  public static long releaseTime(long ts, long windowMs) {
    return ts - Math.floorMod(ts, windowMs) + windowMs - 1;
  }

  /** Removes and returns the records of {@code pending} due at {@code timestamp} (ms). */
  static List<Transaction> due(ListState<Transaction> pending, long timestamp, long windowMs) throws Exception {
    List<Transaction> due = new ArrayList<>();
    List<Transaction> keep = new ArrayList<>();
    Iterable<Transaction> all = pending.get();
    if (all != null) {
      for (Transaction t : all) {
        (releaseTime(t.eventTimeMs(), windowMs) <= timestamp ? due : keep).add(t);
      }
    }
    if (keep.isEmpty()) {
      pending.clear();
    } else {
      pending.update(keep);
    }
    return due;
  }
}
