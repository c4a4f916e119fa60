package io.wattgraph.stream;

import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/** Observations go on; dead letters go to the {@link #DEAD_LETTERS} side output. */
public class SplitDeadLetters extends ProcessFunction<Decoded, Observation> {
  private static final long serialVersionUID = 1L;

  public static final OutputTag<DeadLetter> DEAD_LETTERS = new OutputTag<>("dead-letters") {};

  @Override
  public void processElement(Decoded d, Context ctx, Collector<Observation> out) {
    if (d.observation != null) {
      out.collect(d.observation);
    } else {
      ctx.output(DEAD_LETTERS, d.deadLetter);
    }
  }
}
