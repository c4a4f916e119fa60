package io.wattgraph.stream;

import io.wattgraph.stream.source.CgroupSample;

/**
 * Running totals of one container's CgroupStats in one window (the incremental state of the
 * container windows: no record is buffered). Counters grow (CPU, throttling, I/O: summed), gauges
 * are kept as their peak and their latest value (memory, tasks), with the sum of the records'
 * memory for the mean.
 */
public class CgroupAccumulator {
  public String hostId;
  public String groupId;
  /** The latest record's pod UID, or an earlier one's when the latest has none. */
  public String podUid;
  /** Pod metadata of the latest record that had any (see MetricsAccumulator#pod). */
  public PodMetadata pod;
  public long podIntervalEndNs = Long.MIN_VALUE;
  /** The container's requests, from the same record as {@link #pod} (null there: no request). */
  public Double cpuRequestCores;
  public Long memoryRequestBytes;
  /** intervalEndNs of the latest record, whose gauges (memoryBytes, pids) are the window's last. */
  public long latestIntervalEndNs = Long.MIN_VALUE;
  public int samples;
  public long ticks;
  public long maxTickGapNs;
  public long cpuNs;
  public double cpuPeakCores;
  public long throttledPeriods;
  public long throttledNs;
  public long memoryLastBytes;
  public long memoryPeakBytes;
  public long memorySumBytes;
  public long ioReadBytes;
  public long ioWriteBytes;
  public long pids;
  /** Ids of the records counted: an agent's replayed duplicate is skipped. */
  public RecordIdSet sampleIds = new RecordIdSet();

  public CgroupAccumulator() {}

  public void add(CgroupSample s) {
    if (!sampleIds.add(s.recordId)) {
      return;
    }
    if (hostId == null) {
      hostId = s.hostId;
      groupId = s.groupId;
    }
    boolean latest = s.intervalEndNs >= latestIntervalEndNs;
    if (s.podUid != null && (latest || podUid == null)) {
      podUid = s.podUid;
    }
    if (latest) {
      latestIntervalEndNs = s.intervalEndNs;
      memoryLastBytes = s.memoryBytes;
      pids = s.pids;
    }
    if (s.pod != null && s.intervalEndNs >= podIntervalEndNs) {
      pod = s.pod;
      podIntervalEndNs = s.intervalEndNs;
      cpuRequestCores = s.cpuRequestCores;
      memoryRequestBytes = s.memoryRequestBytes;
    }
    samples++;
    ticks += s.ticks;
    maxTickGapNs = Math.max(maxTickGapNs, s.maxTickGapNs);
    cpuNs += s.cpuNs;
    cpuPeakCores = Math.max(cpuPeakCores, s.cpuPeakCores);
    throttledPeriods += s.throttledPeriods;
    throttledNs += s.throttledNs;
    // The interval's peak covers its last tick too; max() also covers an agent that reports none.
    memoryPeakBytes = Math.max(memoryPeakBytes, Math.max(s.memoryPeakBytes, s.memoryBytes));
    memorySumBytes += s.memoryBytes;
    ioReadBytes += s.ioReadBytes;
    ioWriteBytes += s.ioWriteBytes;
  }

  /** Merges the totals of disjoint inputs (tumbling windows never merge; session windows would). */
  public void merge(CgroupAccumulator o) {
    if (o.samples == 0) {
      return;
    }
    sampleIds.addAll(o.sampleIds);
    if (hostId == null) {
      hostId = o.hostId;
      groupId = o.groupId;
    }
    boolean latest = o.latestIntervalEndNs >= latestIntervalEndNs;
    if (o.podUid != null && (latest || podUid == null)) {
      podUid = o.podUid;
    }
    if (latest) {
      latestIntervalEndNs = o.latestIntervalEndNs;
      memoryLastBytes = o.memoryLastBytes;
      pids = o.pids;
    }
    if (o.pod != null && o.podIntervalEndNs >= podIntervalEndNs) {
      pod = o.pod;
      podIntervalEndNs = o.podIntervalEndNs;
      cpuRequestCores = o.cpuRequestCores;
      memoryRequestBytes = o.memoryRequestBytes;
    }
    samples += o.samples;
    ticks += o.ticks;
    maxTickGapNs = Math.max(maxTickGapNs, o.maxTickGapNs);
    cpuNs += o.cpuNs;
    cpuPeakCores = Math.max(cpuPeakCores, o.cpuPeakCores);
    throttledPeriods += o.throttledPeriods;
    throttledNs += o.throttledNs;
    memoryPeakBytes = Math.max(memoryPeakBytes, o.memoryPeakBytes);
    memorySumBytes += o.memorySumBytes;
    ioReadBytes += o.ioReadBytes;
    ioWriteBytes += o.ioWriteBytes;
  }
}
