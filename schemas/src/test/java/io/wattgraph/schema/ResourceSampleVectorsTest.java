package io.wattgraph.schema;


import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The shared ResourceSample vectors in schemas/test-vectors/resource-sample, also checked by the
 * Rust agent's suite (node-agent/tests/resource_vectors.rs): the bytes the agent writes are the
 * bytes Java decodes, and the other way round.
 */
class ResourceSampleVectorsTest extends SharedVectorsTest<ResourceSample> {

  ResourceSampleVectorsTest() {
    super("resource-sample", 5, ResourceSample.getClassSchema());
  }

  @Override
  ResourceSample record(JsonNode event) {
    return fromJson(event);
  }

  @Override
  ByteBuffer encode(ResourceSample r) throws IOException {
    return ResourceSample.getEncoder().encode(r);
  }

  @Override
  ResourceSample decode(byte[] b) throws IOException {
    return WattgraphSchemas.resourceSampleDecoder().decode(b);
  }

  /** A nullable long field; absent counts as null (fields added later with a null default). */
  private static Long optLong(JsonNode e, String k) {
    JsonNode v = e.get(k);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw new IllegalArgumentException(k + " is not a JSON integer that fits a long: " + v);
    }
    return v.longValue();
  }

  private static Double optDouble(JsonNode e, String k) {
    return e.get(k).isNull() ? null : e.get(k).asDouble();
  }

  static ResourceSample fromJson(JsonNode e) {
    return ResourceSample.newBuilder()
        .setScope(ResourceScope.valueOf(e.get("scope").asText()))
        .setHostId(e.get("hostId").asText())
        .setIntervalStartNs(e.get("intervalStartNs").asLong())
        .setIntervalEndNs(e.get("intervalEndNs").asLong())
        .setTgid(e.get("tgid").asInt())
        .setProcessStartTimeNs(e.get("processStartTimeNs").asLong())
        .setComm(e.get("comm").asText())
        .setCgroupId(e.get("cgroupId").asLong())
        .setGroupId(e.get("groupId").asText())
        .setRuntime(ContainerRuntime.valueOf(e.get("runtime").asText()))
        .setPodUid(optText(e, "podUid"))
        .setQosClass(optText(e, "qosClass"))
        .setThreads(e.get("threads").asInt())
        .setProcesses(e.get("processes").asInt())
        .setCpuTimeNs(e.get("cpuTimeNs").asLong())
        .setCycles(optLong(e, "cycles"))
        .setInstructions(optLong(e, "instructions"))
        .setWeightedCycles(optLong(e, "weightedCycles"))
        .setWeightKind(AttributionWeight.valueOf(e.get("weightKind").asText()))
        .setWeight(e.get("weight").asDouble())
        .setPowerSource(PowerSource.valueOf(e.get("powerSource").asText()))
        .setPowerWatts(e.get("powerWatts").asDouble())
        .setEnergyJoules(e.get("energyJoules").asDouble())
        .setIdlePowerWatts(e.get("idlePowerWatts").asDouble())
        .setUnattributedPowerWatts(e.get("unattributedPowerWatts").asDouble())
        .setPackageWatts(optDouble(e, "packageWatts"))
        .setCoreWatts(optDouble(e, "coreWatts"))
        .setDramWatts(optDouble(e, "dramWatts"))
        .setHostCores(e.get("hostCores").isNull() ? null : e.get("hostCores").asInt())
        .setPodName(optText(e, "podName"))
        .setPodNamespace(optText(e, "podNamespace"))
        .setPodLabels(podLabels(e))
        .setCacheReferences(optLong(e, "cacheReferences"))
        .setCacheMisses(optLong(e, "cacheMisses"))
        .build();
  }

}
