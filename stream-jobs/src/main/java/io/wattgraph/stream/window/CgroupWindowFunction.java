package io.wattgraph.stream.window;

import io.wattgraph.stream.CgroupAccumulator;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;

/** A container window's accumulator as a {@link CgroupRow} (revisions: {@link RevisionWindowFunction}). */
public class CgroupWindowFunction extends RevisionWindowFunction<CgroupAccumulator, CgroupRow> {
  private static final long serialVersionUID = 1L;

  @Override
  long inputs(CgroupAccumulator acc) {
    return acc.samples;
  }

  @Override
  protected CgroupRow toRow(CgroupAccumulator acc, TimeWindow w, int revision) {
    return row(acc, w, revision);
  }

  static CgroupRow row(CgroupAccumulator acc, TimeWindow w, int revision) {
    long windowNs = (w.getEnd() - w.getStart()) * 1_000_000L;
    CgroupRow r = new CgroupRow();
    r.hostId = acc.hostId;
    r.groupId = acc.groupId;
    r.podUid = acc.podUid;
    r.pod = acc.pod;
    r.cpuRequestCores = acc.cpuRequestCores;
    r.memoryRequestBytes = acc.memoryRequestBytes;
    r.windowStartNs = w.getStart() * 1_000_000L;
    r.windowEndNs = w.getEnd() * 1_000_000L;
    r.revision = revision;
    r.samples = acc.samples;
    r.ticks = acc.ticks;
    r.maxTickGapNs = acc.maxTickGapNs;
    // As the entity windows' cpuUsage: CPU time over the window's length (a container that lived
    // for part of the window has a lower mean).
    r.cpuMeanCores = (double) acc.cpuNs / windowNs;
    r.cpuPeakCores = acc.cpuPeakCores;
    r.throttledSeconds = acc.throttledNs / 1e9;
    r.throttledPeriods = acc.throttledPeriods;
    r.memoryPeakBytes = acc.memoryPeakBytes;
    r.memoryLastBytes = acc.memoryLastBytes;
    r.memoryMeanBytes = acc.samples == 0 ? 0 : (double) acc.memorySumBytes / acc.samples;
    r.ioReadBytes = acc.ioReadBytes;
    r.ioWriteBytes = acc.ioWriteBytes;
    r.pids = acc.pids;
    return r;
  }
}
