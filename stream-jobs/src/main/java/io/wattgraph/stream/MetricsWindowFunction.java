package io.wattgraph.stream;

import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * Turns a window's accumulator into a {@link MetricsRow}. Runs at the window's end and again for
 * every late sample within the allowed lateness; a per-window counter gives each emission its
 * revision (0 first, then 1, 2, ...), so consumers keep the highest.
 */
public class MetricsWindowFunction extends ProcessWindowFunction<MetricsAccumulator, MetricsRow, String, TimeWindow> {
  private static final long serialVersionUID = 1L;

  static final ValueStateDescriptor<Integer> FIRINGS = new ValueStateDescriptor<>("firings", Types.INT);

  @Override
  public void process(String key, Context ctx, Iterable<MetricsAccumulator> results, Collector<MetricsRow> out)
      throws Exception {
    MetricsAccumulator acc = results.iterator().next();
    ValueState<Integer> firings = ctx.windowState().getState(FIRINGS);
    int revision = firings.value() == null ? 0 : firings.value();
    firings.update(revision + 1);
    out.collect(toRow(acc, ctx.window(), revision));
  }

  static MetricsRow toRow(MetricsAccumulator acc, TimeWindow w, int revision) {
    double windowSeconds = (w.getEnd() - w.getStart()) / 1e3;
    MetricsRow r = new MetricsRow();
    r.level = acc.level;
    r.hostId = acc.hostId;
    r.entityId = acc.entityId;
    r.groupId = acc.groupId;
    r.podUid = acc.podUid;
    r.comm = acc.comm;
    r.windowStartNs = w.getStart() * 1_000_000L;
    r.windowEndNs = w.getEnd() * 1_000_000L;
    r.revision = revision;
    r.samples = acc.samples;
    r.intervals = acc.intervalEnds.length;
    r.cpuSeconds = acc.cpuTimeNs / 1e9;
    r.cpuCores = r.cpuSeconds / windowSeconds;
    // ResourceSample v1 does not carry the host's core count: share of host cores unknown.
    r.hostCores = null;
    r.hostCpuShare = null;
    r.energyJoules = acc.energyJoules;
    r.powerWatts = acc.energyJoules / windowSeconds;
    r.idlePowerWatts = MetricInput.HOST.equals(acc.level) ? acc.idleEnergyJoules / windowSeconds : null;
    r.powerSource = acc.powerSource();
    r.threads = acc.maxThreads();
    r.processes = acc.maxProcesses();
    return r;
  }

  @Override
  public void clear(Context ctx) throws Exception {
    ctx.windowState().getState(FIRINGS).clear();
  }
}
