package io.wattgraph.schema;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The shared CgroupStats vectors in schemas/test-vectors/cgroup-stats, also checked by the Rust
 * agent's suite (node-agent/tests/cgroup_stats_vectors.rs): the bytes the agent writes are the
 * bytes Java decodes, and the other way round.
 */
class CgroupStatsVectorsTest extends SharedVectorsTest<CgroupStats> {

  CgroupStatsVectorsTest() {
    super("cgroup-stats", 5, CgroupStats.getClassSchema());
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
        .setCpuRequestCores(e.hasNonNull("cpuRequestCores") ? e.get("cpuRequestCores").asDouble() : null)
        .setMemoryRequestBytes(e.hasNonNull("memoryRequestBytes") ? e.get("memoryRequestBytes").asLong() : null)
        .build();
  }

  /** 04-pod-names.json as a v2 agent wrote it (before the request fields). */
  private static final String V2_POD_NAMES = "c3018ae7c2e2851835b80c6e6f64652d618080bfbfed9ac3fa3080a895f9f49ac3fa3080013031323334353637383961626364656630313233343536373839616263646566303132333435363738396162636465663031323334353637383961626364656614434f4e5441494e455244024831313131313131312d323232322d333333332d343434342d3535353535353535353535350212627572737461626c65f8012f6b756265706f64732f627572737461626c652f706f6431313131313131312d323232322d333333332d343434342d3535353535353535353535352f303132333435363738396162636465663031323334353637383961626364656630313233343536373839616263646566303132333435363738396162636465660476318084af5f14a0c6cd5f80cab5ee01000000000000d03f000000000000e83f0000808080328080803380400006021e7765622d37643462392d6162636465020e64656661756c7404066170700877c3a9620e6b38732d6170700677656200";

  @Test
  void v2RecordsStillDecodeWithoutRequests() throws IOException {
    CgroupStats want = fromJson(JSON.readTree(Path.of(System.getProperty("wattgraph.testVectors", "test-vectors"))
        .resolve("cgroup-stats/04-pod-names.json").toFile()).get("event"));
    assertNull(want.getCpuRequestCores());
    byte[] bytes = HexFormat.of().parseHex(V2_POD_NAMES);
    assertEquals(want, decode(bytes));
    assertEquals(want, WattgraphSchemas.recordDecoder(CgroupStats.getClassSchema()).decode(bytes));
  }
}
