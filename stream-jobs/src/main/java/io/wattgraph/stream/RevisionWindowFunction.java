package io.wattgraph.stream;

import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * Turns a window's accumulator into a result row. Runs at the window's end and again for every
 * late input within the allowed lateness; a per-window counter gives each emission its revision
 * (0 first, then 1, 2, ...), so consumers keep the highest.
 */
public abstract class RevisionWindowFunction<A, R> extends ProcessWindowFunction<A, R, String, TimeWindow> {
  private static final long serialVersionUID = 1L;

  static final ValueStateDescriptor<Integer> FIRINGS = new ValueStateDescriptor<>("firings", Types.INT);

  /** The row of one emission of window {@code w}. */
  abstract R toRow(A acc, TimeWindow w, int revision);

  @Override
  public void process(String key, Context ctx, Iterable<A> results, Collector<R> out) throws Exception {
    A acc = results.iterator().next();
    ValueState<Integer> firings = ctx.windowState().getState(FIRINGS);
    int revision = firings.value() == null ? 0 : firings.value();
    firings.update(revision + 1);
    out.collect(toRow(acc, ctx.window(), revision));
  }

  @Override
  public void clear(Context ctx) throws Exception {
    ctx.windowState().getState(FIRINGS).clear();
  }
}
