package io.wattgraph.stream.source;

import io.wattgraph.schema.CgroupStats;
import io.wattgraph.stream.PodMetadata;
import org.apache.avro.Schema;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/**
 * Kafka value ({@code CgroupStats}, Avro single-object encoding) to {@link CgroupSample},
 * validated; what does not decode or is invalid becomes a {@link DeadLetter} (the shared DLQ).
 */
public class CgroupStatsDeserializer extends AgentRecordDeserializer<CgroupStats, CgroupSample> {
  private static final long serialVersionUID = 1L;

  public CgroupStatsDeserializer() {
    super("cgroupDeadLetters");
  }

  @Override
  protected Schema schema() {
    return CgroupStats.getClassSchema();
  }

  @Override
  protected String invalid(CgroupStats r) {
    return invalidReason(r);
  }

  /** Why a decoded record cannot be used, or null when it can. */
  public static String invalidReason(CgroupStats r) {
    if (r.getHostId() == null || r.getHostId().isBlank()) {
      return "invalid: empty hostId";
    }
    if (r.getGroupId() == null || r.getGroupId().isBlank()) {
      return "invalid: empty groupId";
    }
    if (r.getIntervalStartNs() < 0 || r.getIntervalEndNs() <= r.getIntervalStartNs()) {
      return "invalid: interval " + r.getIntervalStartNs() + ".." + r.getIntervalEndNs() + " is empty or negative";
    }
    long[] counts = {r.getCpuNs(), r.getThrottledPeriods(), r.getThrottledNs(), r.getMemoryBytes(),
        r.getMemoryPeakBytes(), r.getIoReadBytes(), r.getIoWriteBytes(), r.getPids(), r.getTicks(),
        r.getMaxTickGapNs()};
    for (long c : counts) {
      if (c < 0) {
        return "invalid: negative count or size " + c + " (cpuNs, throttled, memory, io, pids, ticks)";
      }
    }
    if (!(r.getCpuPeakCores() >= 0) || Double.isInfinite(r.getCpuPeakCores())) {
      return "invalid: cpuPeakCores " + r.getCpuPeakCores();
    }
    Double cpuRequest = r.getCpuRequestCores();
    if (cpuRequest != null && (!(cpuRequest >= 0) || Double.isInfinite(cpuRequest))) {
      return "invalid: cpuRequestCores " + cpuRequest;
    }
    if (r.getMemoryRequestBytes() != null && r.getMemoryRequestBytes() < 0) {
      return "invalid: memoryRequestBytes " + r.getMemoryRequestBytes();
    }
    return null;
  }

  @Override
  protected CgroupSample toValue(CgroupStats r, long recordId) {
    CgroupSample s = new CgroupSample();
    s.hostId = r.getHostId();
    s.intervalStartNs = r.getIntervalStartNs();
    s.intervalEndNs = r.getIntervalEndNs();
    s.groupId = r.getGroupId();
    s.podUid = r.getPodUid();
    s.pod = PodMetadata.of(r.getPodName(), r.getPodNamespace(), r.getPodLabels());
    s.cpuRequestCores = r.getCpuRequestCores();
    s.memoryRequestBytes = r.getMemoryRequestBytes();
    s.ticks = r.getTicks();
    s.maxTickGapNs = r.getMaxTickGapNs();
    s.cpuNs = r.getCpuNs();
    s.cpuPeakCores = r.getCpuPeakCores();
    s.throttledPeriods = r.getThrottledPeriods();
    s.throttledNs = r.getThrottledNs();
    s.memoryBytes = r.getMemoryBytes();
    s.memoryPeakBytes = r.getMemoryPeakBytes();
    s.ioReadBytes = r.getIoReadBytes();
    s.ioWriteBytes = r.getIoWriteBytes();
    s.pids = r.getPids();
    s.recordId = recordId;
    return s;
  }

  @Override
  public TypeInformation<Decoded<CgroupSample>> getProducedType() {
    return TypeInformation.of(new TypeHint<Decoded<CgroupSample>>() {});
  }
}
