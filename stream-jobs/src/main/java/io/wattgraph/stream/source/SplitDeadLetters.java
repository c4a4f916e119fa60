package io.wattgraph.stream.source;

import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Values go on; dead letters go to the {@link #DEAD_LETTERS} side output. For every input whose
 * deserializer yields a {@link Decoded} (the caller gives the value's type to {@code process}).
 */
public class SplitDeadLetters<T> extends ProcessFunction<Decoded<T>, T> {
  private static final long serialVersionUID = 1L;

  public static final OutputTag<DeadLetter> DEAD_LETTERS = new OutputTag<>("dead-letters") {};

  @Override
  public void processElement(Decoded<T> d, Context ctx, Collector<T> out) {
    T value = d.value;
    if (value != null) {
      out.collect(value);
    } else {
      ctx.output(DEAD_LETTERS, d.deadLetter);
    }
  }
}
