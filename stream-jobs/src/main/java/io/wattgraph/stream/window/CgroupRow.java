package io.wattgraph.stream.window;

import io.wattgraph.stream.PodMetadata;

/** One container's CgroupStats window: the figures written onto its {@code Container} node. */
public class CgroupRow {
  public String hostId;
  /** The container id. */
  public String groupId;
  public String podUid;
  public PodMetadata pod;
  /** The container's Kubernetes requests (with {@link #pod}; null: none, or the pod unknown). */
  public Double cpuRequestCores;
  public Long memoryRequestBytes;
  public long windowStartNs;
  public long windowEndNs;
  public int revision;
  /** CgroupStats records counted, and the agent's ticks in them. */
  public int samples;
  public long ticks;
  /** Largest gap between two ticks: the sampling quality of the peaks. */
  public long maxTickGapNs;
  /** The container's CPU over the window divided by the window's length. */
  public double cpuMeanCores;
  /** Highest tick-to-tick CPU rate in the window. */
  public double cpuPeakCores;
  public double throttledSeconds;
  public long throttledPeriods;
  /** Highest memory usage of any tick in the window: what the container needs. */
  public long memoryPeakBytes;
  /** Memory usage at the window's last tick. */
  public long memoryLastBytes;
  /** Mean over the window's records of their last tick's memory usage. */
  public double memoryMeanBytes;
  public long ioReadBytes;
  public long ioWriteBytes;
  /** Tasks at the window's last tick. */
  public long pids;

  public CgroupRow() {}

  /** The sink buffer key: host|container. */
  public String key() {
    return hostId + "|" + groupId;
  }

  @Override
  public String toString() {
    return "CgroupRow{" + key() + " [" + windowStartNs + "," + windowEndNs + ") rev " + revision + " samples " + samples
        + " cpu mean " + cpuMeanCores + " peak " + cpuPeakCores + " throttled " + throttledSeconds + " s mem peak "
        + memoryPeakBytes + " last " + memoryLastBytes + " io r/w " + ioReadBytes + "/" + ioWriteBytes + "}";
  }
}
