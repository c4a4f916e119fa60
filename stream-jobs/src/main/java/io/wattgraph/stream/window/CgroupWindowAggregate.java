package io.wattgraph.stream.window;

import io.wattgraph.stream.CgroupAccumulator;
import io.wattgraph.stream.source.CgroupSample;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.java.functions.KeySelector;

/** Incremental container window aggregation: one {@link CgroupAccumulator} per container and window. */
public class CgroupWindowAggregate implements AggregateFunction<CgroupSample, CgroupAccumulator, CgroupAccumulator> {
  private static final long serialVersionUID = 1L;

  @Override
  public CgroupAccumulator createAccumulator() {
    return new CgroupAccumulator();
  }

  @Override
  public CgroupAccumulator add(CgroupSample in, CgroupAccumulator acc) {
    acc.add(in);
    return acc;
  }

  @Override
  public CgroupAccumulator getResult(CgroupAccumulator acc) {
    return acc;
  }

  @Override
  public CgroupAccumulator merge(CgroupAccumulator a, CgroupAccumulator b) {
    a.merge(b);
    return a;
  }

  /** The key: {@code hostId|containerId}. */
  public static final class ByContainer implements KeySelector<CgroupSample, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(CgroupSample in) {
      return in.key();
    }
  }
}
