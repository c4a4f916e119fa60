package io.wattgraph.stream;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimerService;

/**
 * The {@link RecordIds} a keyed operator has let through, per event-time window of the records, so
 * that an agent's replayed duplicate is dropped before it reaches the windows (which sum, so would
 * count it twice). A window's ids are forgotten by an event-time timer once the window can take no
 * more input: its end plus the allowed lateness, plus one more window as a margin for the windows
 * downstream, whose watermark may lag this operator's. A duplicate arriving after that is late for
 * its window anyway and dropped there (counted as late). Heap state: the sets are updated in place.
 */
final class SeenRecords implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  private final long windowMs;
  private final long keepMs;
  private transient MapState<Long, RecordIdSet> seen;
  private transient Counter duplicates;

  SeenRecords(long windowMs, long allowedLatenessMs) {
    this.windowMs = windowMs;
    this.keepMs = allowedLatenessMs + windowMs;
  }

  void open(RuntimeContext ctx) {
    seen = ctx.getMapState(new MapStateDescriptor<>("seen-records", Types.LONG, TypeInformation.of(RecordIdSet.class)));
    duplicates = ctx.getMetricGroup().counter("duplicateRecordsDropped");
  }

  /**
   * True the first time {@code recordId} (event time {@code timestamp} ms) is seen by this key;
   * false for a duplicate (counted). A record without an id (0) is always new.
   */
  boolean firstTime(long recordId, long timestamp, TimerService timers) throws Exception {
    if (recordId == 0) {
      return true;
    }
    long start = timestamp - Math.floorMod(timestamp, windowMs);
    RecordIdSet ids = seen.get(start);
    if (ids == null) {
      ids = new RecordIdSet();
      timers.registerEventTimeTimer(forgetAt(start));
    } else if (ids.contains(recordId)) {
      duplicates.inc();
      return false;
    }
    ids.add(recordId);
    seen.put(start, ids);
    return true;
  }

  /** From the operator's onTimer: forgets the windows due at {@code timestamp}. */
  void onTimer(long timestamp) throws Exception {
    List<Long> due = new ArrayList<>();
    for (Map.Entry<Long, RecordIdSet> e : seen.entries()) {
      if (forgetAt(e.getKey()) <= timestamp) {
        due.add(e.getKey());
      }
    }
    for (Long start : due) {
      seen.remove(start);
    }
  }

  private long forgetAt(long windowStart) {
    return windowStart + windowMs - 1 + keepMs;
  }
}
