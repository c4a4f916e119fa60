package io.wattgraph.stream.window;

import io.wattgraph.stream.NamespaceAccumulator;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;

/**
 * A namespace window's result (revisions: {@link RevisionWindowFunction}): the entity windows' row
 * ({@link EntityWindowFunction#row}: the same CPU, power and percentile code) as level NAMESPACE,
 * hostId {@link #ALL_HOSTS}, with the host, pod and container counts.
 */
public class NamespaceWindowFunction extends RevisionWindowFunction<NamespaceAccumulator, MetricsRow> {
  private static final long serialVersionUID = 1L;

  /** hostId of a NAMESPACE row: the namespace over all hosts. */
  public static final String ALL_HOSTS = "*";

  @Override
  long inputs(NamespaceAccumulator acc) {
    return acc.totals.inputs();
  }

  @Override
  protected MetricsRow toRow(NamespaceAccumulator acc, TimeWindow w, int revision) {
    return row(acc, w, revision);
  }

  static MetricsRow row(NamespaceAccumulator acc, TimeWindow w, int revision) {
    MetricsRow r = EntityWindowFunction.row(acc.totals, w, revision);
    r.level = MetricInput.NAMESPACE;
    r.hostId = ALL_HOSTS;
    r.entityId = acc.namespace;
    r.groupId = null;
    r.podUid = null;
    r.comm = null;
    r.pod = null;
    // Per-host figures: cores, thread counts and PowerThesis Eq. 3.3-3.5 have no meaning summed over hosts.
    r.hostCores = null;
    r.hostCpuShare = null;
    r.idlePowerWatts = null;
    r.threads = 0;
    r.processes = 0;
    r.utilization = null;
    r.serviceDemandSeconds = null;
    r.saturationRate = null;
    r.hosts = acc.hosts.length;
    r.pods = acc.pods.length;
    r.containers = acc.containers.length;
    return r;
  }
}
