package io.wattgraph.stream.window;

import io.wattgraph.stream.JobConfig;
import java.util.function.BiFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;

/**
 * A production window operator, as {@code CorrelationJob} builds it, in Flink's keyed operator harness: the tests
 * drive the real operator (trigger, lateness, aggregate, window function) with watermarks set by hand.
 */
public final class WindowHarness {
  private WindowHarness() {}

  /** A 10 s window with the given allowed lateness: the settings every window test works out by hand. */
  public static JobConfig config(long allowedLatenessMs) {
    JobConfig c = new JobConfig();
    c.windowMs = 10_000;
    c.allowedLatenessMs = allowedLatenessMs;
    return c;
  }

  /** The operator {@code build} makes from a stream of {@code in}, keyed by {@code key}; not yet opened. */
  public static <I, O> KeyedOneInputStreamOperatorTestHarness<String, I, O> of(
      BiFunction<DataStream<I>, JobConfig, SingleOutputStreamOperator<O>> build, Class<I> in,
      KeySelector<I, String> key, JobConfig c) throws Exception {
    I example = in.getDeclaredConstructor().newInstance();
    SingleOutputStreamOperator<O> rows =
        build.apply(StreamExecutionEnvironment.getExecutionEnvironment().fromData(example).returns(in), c);
    @SuppressWarnings("unchecked")
    OneInputTransformation<I, O> t = (OneInputTransformation<I, O>) rows.getTransformation();
    return new KeyedOneInputStreamOperatorTestHarness<>(t.getOperatorFactory(), key, Types.STRING);
  }

  /** As {@link #of}, opened. */
  public static <I, O> KeyedOneInputStreamOperatorTestHarness<String, I, O> open(
      BiFunction<DataStream<I>, JobConfig, SingleOutputStreamOperator<O>> build, Class<I> in,
      KeySelector<I, String> key, JobConfig c) throws Exception {
    KeyedOneInputStreamOperatorTestHarness<String, I, O> h = of(build, in, key, c);
    h.open();
    return h;
  }
}
