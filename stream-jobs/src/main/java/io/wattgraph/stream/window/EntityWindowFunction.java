package io.wattgraph.stream.window;

import io.wattgraph.stream.JobConfig;
import io.wattgraph.stream.MetricsAccumulator;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;

/**
 * Turns an entity window's accumulator into a {@link MetricsRow} (revisions: {@link
 * RevisionWindowFunction}): CPU and power from the ResourceSamples, the transaction metrics from
 * the TransactionStats, and where both are present the operational analysis (PowerThesis Eq. 3.3-3.5).
 */
public class EntityWindowFunction extends RevisionWindowFunction<MetricsAccumulator, MetricsRow> {
  private static final long serialVersionUID = 1L;

  /** Routes per role in a result ({@code --max-http-routes}); the rest are folded into OTHER *. */
  private final int maxHttpRoutes;

  public EntityWindowFunction(int maxHttpRoutes) {
    this.maxHttpRoutes = maxHttpRoutes;
  }

  @Override
  long inputs(MetricsAccumulator acc) {
    return acc.inputs();
  }

  @Override
  protected MetricsRow toRow(MetricsAccumulator acc, TimeWindow w, int revision) {
    return row(acc, w, revision, maxHttpRoutes);
  }

  /** With the default route cap. */
  static MetricsRow row(MetricsAccumulator acc, TimeWindow w, int revision) {
    return row(acc, w, revision, JobConfig.DEFAULT_MAX_HTTP_ROUTES);
  }

  static MetricsRow row(MetricsAccumulator acc, TimeWindow w, int revision, int maxHttpRoutes) {
    double windowSeconds = (w.getEnd() - w.getStart()) / 1e3;
    MetricsRow r = new MetricsRow();
    r.level = acc.level;
    r.hostId = acc.hostId;
    r.entityId = acc.entityId;
    r.groupId = acc.groupId;
    r.podUid = MetricInput.PROCESS.equals(acc.level) ? null : acc.podUid;
    r.comm = acc.comm;
    r.pod = acc.pod;
    r.windowStartNs = w.getStart() * 1_000_000L;
    r.windowEndNs = w.getEnd() * 1_000_000L;
    r.revision = revision;
    r.samples = acc.samples;
    r.intervals = acc.intervalEnds.length;
    r.cpuSeconds = acc.cpuTimeNs / 1e9;
    r.cpuCores = r.cpuSeconds / windowSeconds;
    // Agents before ResourceSample v2 do not report the host's cores: share unknown then.
    r.hostCores = acc.hostCores > 0 ? acc.hostCores : null;
    r.hostCpuShare = r.hostCores != null ? r.cpuCores / r.hostCores : null;
    r.energyJoules = acc.energyJoules;
    r.powerWatts = acc.energyJoules / windowSeconds;
    r.idlePowerWatts = MetricInput.HOST.equals(acc.level) ? acc.idleEnergyJoules / windowSeconds : null;
    r.powerSource = acc.powerSource();
    r.threads = acc.maxThreads();
    r.processes = acc.maxProcesses();
    if (acc.tx.records > 0) {
      r.tx = acc.tx;
      r.clientRtt = acc.tx.clientRtt.stats(acc.tx.subBucketBits);
      r.serverTime = acc.tx.serverTime.stats(acc.tx.subBucketBits);
      r.httpRoutes = HttpRouteCap.cap(acc.httpRoutes.routes, maxHttpRoutes).stream()
          .map(route -> HttpRouteRow.of(route, windowSeconds, acc.tx.subBucketBits))
          .toArray(HttpRouteRow[]::new);
    }
    operationalAnalysis(r, windowSeconds);
    return r;
  }

  /**
   * PowerThesis Eq. 3.3-3.5 for one entity and window. U = CPU usage (cores) / min(#cores, #threads)
   * (Eq. 3.3; #threads is the highest per-interval thread count of the window, #cores the host's
   * CPUs online as the agent reports them; from agents that do not, min(#cores, #threads) =
   * #threads); D = U / lambda with lambda the served
   * transactions per second (Eq. 3.4); the entity's saturation arrival rate 1 / D (an application's
   * lambda_sat of Eq. 3.5 is 1 / D_max, i.e. the smallest of its entities'). Needs the CPU seconds of
   * the same entity and window: both inputs are in this one window state, so no join is needed.
   */
  static void operationalAnalysis(MetricsRow r, double windowSeconds) {
    if (r.samples == 0) {
      return;
    }
    int parallelism = r.hostCores != null ? Math.min(r.hostCores, r.threads) : r.threads;
    if (parallelism <= 0) {
      return;
    }
    r.utilization = r.cpuCores / parallelism;
    if (r.tx == null || r.tx.serverTransactions == 0) {
      return;
    }
    double lambda = r.tx.serverTransactions / windowSeconds;
    r.serviceDemandSeconds = r.utilization / lambda;
    if (r.serviceDemandSeconds > 0) {
      r.saturationRate = 1 / r.serviceDemandSeconds;
    }
  }
}
