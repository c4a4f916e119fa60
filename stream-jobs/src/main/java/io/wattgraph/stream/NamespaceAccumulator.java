package io.wattgraph.stream;

import io.wattgraph.stream.window.MetricInput;
import java.util.Arrays;

/**
 * Running totals of one namespace window (all hosts): CPU, energy and the transactions with their
 * exactly merged histograms in a {@link MetricsAccumulator}, as the entity windows keep them, plus
 * the distinct hosts, pods and containers that contributed (sorted arrays: a Flink POJO, no Kryo).
 */
public class NamespaceAccumulator {
  public String namespace;
  public MetricsAccumulator totals = new MetricsAccumulator();
  public String[] hosts = new String[0];
  public String[] pods = new String[0];
  public String[] containers = new String[0];

  public NamespaceAccumulator() {}

  public void add(MetricInput in) {
    namespace = in.entityId;
    if (in.transaction != null) {
      // No HTTP routes: NamespaceMetrics has none, so they are not kept either.
      totals.addTransaction(in.transaction);
    } else if (in.transactions != null) {
      totals.tx.merge(in.transactions);
    } else {
      totals.add(in);
    }
    hosts = with(hosts, in.hostId);
    pods = with(pods, in.podUid);
    containers = with(containers, in.groupId);
  }

  public void merge(NamespaceAccumulator o) {
    namespace = namespace != null ? namespace : o.namespace;
    totals.merge(o.totals);
    for (String h : o.hosts) {
      hosts = with(hosts, h);
    }
    for (String p : o.pods) {
      pods = with(pods, p);
    }
    for (String c : o.containers) {
      containers = with(containers, c);
    }
  }

  /** The sorted set {@code sorted} with {@code v} (unchanged for null, blank or present). */
  static String[] with(String[] sorted, String v) {
    if (v == null || v.isBlank()) {
      return sorted;
    }
    int i = Arrays.binarySearch(sorted, v);
    if (i >= 0) {
      return sorted;
    }
    int at = -i - 1;
    String[] out = new String[sorted.length + 1];
    System.arraycopy(sorted, 0, out, 0, at);
    out[at] = v;
    System.arraycopy(sorted, at, out, at + 1, sorted.length - at);
    return out;
  }
}
