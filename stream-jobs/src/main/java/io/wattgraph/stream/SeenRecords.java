package io.wattgraph.stream;

import java.time.Duration;
import java.util.Arrays;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.metrics.Counter;

/**
 * The {@code RecordIds} a keyed operator has let through, per event-time window of the records, so
 * that an agent's replayed duplicate is dropped before it reaches the windows (which sum, so would
 * count it twice). A window's ids are forgotten once the window can take no more input: when the
 * watermark passed its end plus the allowed lateness plus one more window (a margin for the windows
 * downstream, whose watermark may lag this operator's), checked at the key's next record; a key
 * that gets no more records is dropped by the state TTL (processing time, as the operators' other
 * state). A duplicate arriving after that is late for its window anyway and dropped there (counted
 * as late). No timers: one per key and window cost more than the lookups (benchmark).
 */
public final class SeenRecords implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  /** The live windows of one key: their starts and their ids (a few windows at a time). */
  public static class Windows {
    public long[] starts = new long[0];
    public RecordIdSet[] ids = new RecordIdSet[0];

    public Windows() {}
  }

  private final long windowMs;
  private final long keepMs;
  // One value per key, not a MapState: a map's inner hash map per key cost twice the lookups.
  private transient ValueState<Windows> seen;
  private transient Counter duplicates;

  public SeenRecords(long windowMs, long allowedLatenessMs) {
    this.windowMs = windowMs;
    this.keepMs = allowedLatenessMs + windowMs;
  }

  public void open(RuntimeContext ctx, long ttlMs) {
    ValueStateDescriptor<Windows> d = new ValueStateDescriptor<>("seen-records", TypeInformation.of(Windows.class));
    // Refreshed by the write of every new record (a duplicate alone does not keep the key alive).
    d.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(ttlMs)).updateTtlOnCreateAndWrite().build());
    seen = ctx.getState(d);
    duplicates = ctx.getMetricGroup().counter("duplicateRecordsDropped");
  }

  /**
   * True the first time {@code recordId} (event time {@code timestamp} ms) is seen by this key;
   * false for a duplicate (counted). A record without an id (0) is always new.
   */
  public boolean firstTime(long recordId, long timestamp, long watermark) throws Exception {
    if (recordId == 0) {
      return true;
    }
    long start = timestamp - Math.floorMod(timestamp, windowMs);
    Windows w = seen.value();
    if (w == null) {
      w = new Windows();
    } else {
      forget(w, watermark);
    }
    int i = 0;
    while (i < w.starts.length && w.starts[i] != start) {
      i++;
    }
    if (i == w.starts.length) {
      w.starts = Arrays.copyOf(w.starts, i + 1);
      w.ids = Arrays.copyOf(w.ids, i + 1);
      w.starts[i] = start;
      w.ids[i] = new RecordIdSet();
    }
    if (!w.ids[i].add(recordId)) {
      duplicates.inc();
      return false;
    }
    seen.update(w);
    return true;
  }

  /** Drops the windows that can take no more input at {@code watermark}. */
  private void forget(Windows w, long watermark) {
    int kept = 0;
    for (int i = 0; i < w.starts.length; i++) {
      if (forgetAt(w.starts[i]) > watermark) {
        w.starts[kept] = w.starts[i];
        w.ids[kept++] = w.ids[i];
      }
    }
    if (kept < w.starts.length) {
      w.starts = Arrays.copyOf(w.starts, kept);
      w.ids = Arrays.copyOf(w.ids, kept);
    }
  }

  private long forgetAt(long windowStart) {
    return windowStart + windowMs - 1 + keepMs;
  }
}
