package io.wattgraph.schema;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The shared CgroupStats vectors in schemas/test-vectors/cgroup-stats, also checked by the Rust
 * agent's suite (node-agent/tests/cgroup_stats_vectors.rs): the bytes the agent writes are the
 * bytes Java decodes, and the other way round.
 */
class CgroupStatsVectorsTest extends SharedVectorsTest<CgroupStats> {

  CgroupStatsVectorsTest() {
    super("cgroup-stats", 4, CgroupStats.getClassSchema());
  }

  @Override
  CgroupStats record(JsonNode event) {
    return fromJson(event);
  }

  @Override
  ByteBuffer encode(CgroupStats r) throws IOException {
    return WattgraphSchemas.cgroupStatsEncoder().encode(r);
  }

  @Override
  CgroupStats decode(byte[] b) throws IOException {
    return WattgraphSchemas.cgroupStatsDecoder().decode(b);
  }

  static CgroupStats fromJson(JsonNode e) {
    return CgroupStats.newBuilder()
        .setHostId(e.get("hostId").asText())
        .setIntervalStartNs(e.get("intervalStartNs").asLong())
        .setIntervalEndNs(e.get("intervalEndNs").asLong())
        .setGroupId(e.get("groupId").asText())
        .setRuntime(e.get("runtime").asText())
        .setPodUid(optText(e, "podUid"))
        .setQosClass(optText(e, "qosClass"))
        .setCgroupPath(e.get("cgroupPath").asText())
        .setHierarchy(e.get("hierarchy").asText())
        .setTickIntervalNs(e.get("tickIntervalNs").asLong())
        .setTicks(e.get("ticks").asInt())
        .setMaxTickGapNs(e.get("maxTickGapNs").asLong())
        .setCpuNs(e.get("cpuNs").asLong())
        .setCpuMeanCores(e.get("cpuMeanCores").asDouble())
        .setCpuPeakCores(e.get("cpuPeakCores").asDouble())
        .setThrottledPeriods(e.get("throttledPeriods").asLong())
        .setThrottledNs(e.get("throttledNs").asLong())
        .setMemoryBytes(e.get("memoryBytes").asLong())
        .setMemoryPeakBytes(e.get("memoryPeakBytes").asLong())
        .setIoReadBytes(e.get("ioReadBytes").asLong())
        .setIoWriteBytes(e.get("ioWriteBytes").asLong())
        .setPids(e.get("pids").asLong())
        .setPodName(optText(e, "podName"))
        .setPodNamespace(optText(e, "podNamespace"))
        .setPodLabels(podLabels(e))
        .build();
  }
}
