package io.wattgraph.stream.window;

import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.triggers.TriggerResult;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;

/**
 * Flink's event-time trigger (fires when the watermark passes the window's end, and again for each
 * input within the allowed lateness), which also clears a window restored from a checkpoint written
 * with another {@code --allowed-lateness-ms}. Flink clears a window's state only on a timer at exactly
 * its end + the operator's lateness; the cleanup timer in such a checkpoint is at the old lateness,
 * so a restored window that gets no further input would stay in state for good. Its old timer
 * re-arms the cleanup at the current lateness instead (at once when that is past).
 */
public final class WindowEndTrigger extends Trigger<Object, TimeWindow> {
  private static final long serialVersionUID = 1L;

  private final long allowedLatenessMs;

  public WindowEndTrigger(long allowedLatenessMs) {
    this.allowedLatenessMs = allowedLatenessMs;
  }

  @Override
  public TriggerResult onElement(Object element, long timestamp, TimeWindow window, TriggerContext ctx) {
    if (window.maxTimestamp() <= ctx.getCurrentWatermark()) {
      return TriggerResult.FIRE; // late, within the lateness (later inputs never get here)
    }
    ctx.registerEventTimeTimer(window.maxTimestamp());
    return TriggerResult.CONTINUE;
  }

  @Override
  public TriggerResult onEventTime(long time, TimeWindow window, TriggerContext ctx) {
    if (time == window.maxTimestamp()) {
      return TriggerResult.FIRE;
    }
    long cleanup = window.maxTimestamp() + allowedLatenessMs;
    if (time > window.maxTimestamp() && time != cleanup) {
      ctx.registerEventTimeTimer(cleanup);
    }
    return TriggerResult.CONTINUE;
  }

  @Override
  public TriggerResult onProcessingTime(long time, TimeWindow window, TriggerContext ctx) {
    return TriggerResult.CONTINUE;
  }

  @Override
  public void clear(TimeWindow window, TriggerContext ctx) {
    ctx.deleteEventTimeTimer(window.maxTimestamp());
  }

  @Override
  public String toString() {
    return "WindowEndTrigger(" + allowedLatenessMs + " ms)";
  }
}
