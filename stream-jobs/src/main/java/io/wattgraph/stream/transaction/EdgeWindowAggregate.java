package io.wattgraph.stream.transaction;

import io.wattgraph.stream.EdgeAccumulator;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.java.functions.KeySelector;

/** Incremental edge window aggregation: one {@link EdgeAccumulator} per edge and window. */
public class EdgeWindowAggregate implements AggregateFunction<EdgeInput, EdgeAccumulator, EdgeAccumulator> {
  private static final long serialVersionUID = 1L;

  @Override
  public EdgeAccumulator createAccumulator() {
    return new EdgeAccumulator();
  }

  @Override
  public EdgeAccumulator add(EdgeInput in, EdgeAccumulator acc) {
    acc.add(in);
    return acc;
  }

  @Override
  public EdgeAccumulator getResult(EdgeAccumulator acc) {
    return acc;
  }

  @Override
  public EdgeAccumulator merge(EdgeAccumulator a, EdgeAccumulator b) {
    a.merge(b);
    return a;
  }

  /** The key: the edge, client process (or External) to server process (or External). */
  public static final class ByEdge implements KeySelector<EdgeInput, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(EdgeInput in) {
      return in.key();
    }
  }
}
