package io.wattgraph.stream.source;

import io.wattgraph.schema.CgroupStats;
import java.nio.ByteBuffer;
import java.util.Map;

/** CgroupStats records for the tests, with the agent's constant fields filled in. */
public final class CgroupRecords {
  public static final long MIB = 1L << 20;

  private CgroupRecords() {}

  /** One record of {@code container} on {@code host} over [startNs, endNs); the figures are set by the caller. */
  public static CgroupStats.Builder stats(String host, String container, long startNs, long endNs) {
    return CgroupStats.newBuilder()
        .setHostId(host)
        .setIntervalStartNs(startNs)
        .setIntervalEndNs(endNs)
        .setGroupId(container)
        .setRuntime("CONTAINERD")
        .setCgroupPath("/kubepods.slice/cri-containerd-" + container + ".scope")
        .setHierarchy("v2")
        .setTickIntervalNs(10_000_000L)
        .setTicks(0)
        .setMaxTickGapNs(0)
        .setCpuNs(0)
        .setCpuMeanCores(0)
        .setCpuPeakCores(0)
        .setThrottledPeriods(0)
        .setThrottledNs(0)
        .setMemoryBytes(0)
        .setMemoryPeakBytes(0)
        .setIoReadBytes(0)
        .setIoWriteBytes(0)
        .setPids(0)
        .setPodLabels(Map.of());
  }

  public static byte[] encode(CgroupStats s) {
    try {
      ByteBuffer b = CgroupStats.getEncoder().encode(s);
      byte[] bytes = new byte[b.remaining()];
      b.get(bytes);
      return bytes;
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
