package io.wattgraph.stream.window;

import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * Turns a window's accumulator into a result row. Runs at the window's end and again for every
 * late input within the allowed lateness; a per-window counter gives each emission its revision
 * (0 first, then 1, 2, ...), so consumers keep the highest. A late input that changed nothing (a
 * duplicate the accumulator skipped) emits nothing: the result would repeat the last one.
 */
public abstract class RevisionWindowFunction<A, R> extends ProcessWindowFunction<A, R, String, TimeWindow> {
  private static final long serialVersionUID = 1L;

  static final ValueStateDescriptor<Integer> FIRINGS = new ValueStateDescriptor<>("firings", Types.INT);
  static final ValueStateDescriptor<Long> EMITTED_INPUTS = new ValueStateDescriptor<>("emitted-inputs", Types.LONG);

  /** The row of one emission of window {@code w}. */
  protected abstract R toRow(A acc, TimeWindow w, int revision);

  /** Inputs counted in {@code acc}, if the accumulator skips duplicates; -1: always emit. */
  long inputs(A acc) {
    return -1;
  }

  @Override
  public void process(String key, Context ctx, Iterable<A> results, Collector<R> out) throws Exception {
    A acc = results.iterator().next();
    long inputs = inputs(acc);
    if (inputs >= 0) {
      ValueState<Long> emitted = ctx.windowState().getState(EMITTED_INPUTS);
      Long last = emitted.value();
      if (last != null && last == inputs) {
        return;
      }
      emitted.update(inputs);
    }
    ValueState<Integer> firings = ctx.windowState().getState(FIRINGS);
    int revision = firings.value() == null ? 0 : firings.value();
    firings.update(revision + 1);
    out.collect(toRow(acc, ctx.window(), revision));
  }

  @Override
  public void clear(Context ctx) throws Exception {
    ctx.windowState().getState(FIRINGS).clear();
    ctx.windowState().getState(EMITTED_INPUTS).clear();
  }
}
