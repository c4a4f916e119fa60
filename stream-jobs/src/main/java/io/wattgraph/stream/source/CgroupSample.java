package io.wattgraph.stream.source;

import io.wattgraph.stream.PodMetadata;

/** The fields of a {@code CgroupStats} record the container windows use (a Flink POJO). */
public class CgroupSample {
  public String hostId;
  public long intervalStartNs;
  public long intervalEndNs;
  /** The container id, the {@code Container} node's id. */
  public String groupId;
  public String podUid;
  /** Pod name, namespace, labels; null when the record has none. */
  public PodMetadata pod;
  /** The container's Kubernetes requests (CgroupStats v3): cores and bytes, null where none or unknown. */
  public Double cpuRequestCores;
  public Long memoryRequestBytes;
  public int ticks;
  public long maxTickGapNs;
  public long cpuNs;
  public double cpuPeakCores;
  public long throttledPeriods;
  public long throttledNs;
  /** Usage at the interval's last tick. */
  public long memoryBytes;
  public long memoryPeakBytes;
  public long ioReadBytes;
  public long ioWriteBytes;
  public long pids;
  /** {@link RecordIds} of the Kafka record: the agents' replayed duplicates are dropped. */
  public long recordId;

  public CgroupSample() {}

  /** Event time in ms: the interval end minus 1 ns, as {@link Sample#eventTimeMs()}. */
  public long eventTimeMs() {
    return Math.floorDiv(intervalEndNs - 1, 1_000_000L);
  }

  /** The window key: the container on its host. */
  public String key() {
    return hostId + "|" + groupId;
  }

  @Override
  public String toString() {
    return "CgroupSample{" + key() + " @" + intervalEndNs + " cpuNs=" + cpuNs + " mem=" + memoryBytes + "}";
  }
}
