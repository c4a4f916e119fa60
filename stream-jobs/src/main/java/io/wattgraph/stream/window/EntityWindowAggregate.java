package io.wattgraph.stream.window;

import io.wattgraph.stream.MetricsAccumulator;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.java.functions.KeySelector;

/** Incremental window aggregation: one {@link MetricsAccumulator} per key and window. */
public class EntityWindowAggregate implements AggregateFunction<MetricInput, MetricsAccumulator, MetricsAccumulator> {
  private static final long serialVersionUID = 1L;

  @Override
  public MetricsAccumulator createAccumulator() {
    return new MetricsAccumulator();
  }

  @Override
  public MetricsAccumulator add(MetricInput in, MetricsAccumulator acc) {
    acc.add(in);
    return acc;
  }

  @Override
  public MetricsAccumulator getResult(MetricsAccumulator acc) {
    return acc;
  }

  @Override
  public MetricsAccumulator merge(MetricsAccumulator a, MetricsAccumulator b) {
    a.merge(b);
    return a;
  }

  /** The key: {@code LEVEL|hostId|entityId}. */
  public static final class ByWindowKey implements KeySelector<MetricInput, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(MetricInput in) {
      return in.key();
    }
  }
}
