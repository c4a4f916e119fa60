package io.wattgraph.stream.window;

import io.wattgraph.stream.NamespaceAccumulator;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.java.functions.KeySelector;

/** Incremental namespace window aggregation: one {@link NamespaceAccumulator} per namespace and window. */
public class NamespaceWindowAggregate implements AggregateFunction<MetricInput, NamespaceAccumulator, NamespaceAccumulator> {
  private static final long serialVersionUID = 1L;

  @Override
  public NamespaceAccumulator createAccumulator() {
    return new NamespaceAccumulator();
  }

  @Override
  public NamespaceAccumulator add(MetricInput in, NamespaceAccumulator acc) {
    acc.add(in);
    return acc;
  }

  @Override
  public NamespaceAccumulator getResult(NamespaceAccumulator acc) {
    return acc;
  }

  @Override
  public NamespaceAccumulator merge(NamespaceAccumulator a, NamespaceAccumulator b) {
    a.merge(b);
    return a;
  }

  /** The key: the namespace alone (all hosts), so one subtask holds a namespace. */
  public static final class ByNamespace implements KeySelector<MetricInput, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(MetricInput in) {
      return in.entityId;
    }
  }
}
