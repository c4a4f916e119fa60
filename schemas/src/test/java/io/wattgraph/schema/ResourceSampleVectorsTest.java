package io.wattgraph.schema;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The shared ResourceSample vectors in schemas/test-vectors/resource-sample, also checked by the
 * Rust agent's suite (node-agent/tests/resource_vectors.rs): the bytes the agent writes are the
 * bytes Java decodes, and the other way round.
 */
class ResourceSampleVectorsTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path DIR =
      Path.of(System.getProperty("wattgraph.testVectors", "test-vectors")).resolve("resource-sample");

  static Stream<Path> vectors() throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.list(DIR)) {
      files = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
    }
    return files.stream();
  }

  @Test
  void thereAreVectors() throws IOException {
    assertTrue(vectors().count() >= 4, "expected the shared vectors under " + DIR.toAbsolutePath());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("vectors")
  void javaEncodesExactlyTheVectorBytes(Path file) throws IOException {
    JsonNode doc = JSON.readTree(file.toFile());
    String hex = HexFormat.of().formatHex(toArray(ResourceSample.getEncoder().encode(fromJson(doc.get("event")))));
    if (Boolean.getBoolean("wattgraph.writeVectors")) {
      ((ObjectNode) doc).put("singleObjectHex", hex);
      Files.writeString(file, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(doc) + "\n");
    }
    assertFalse(doc.get("singleObjectHex").asText().isEmpty(), "vector has no bytes: " + file);
    assertEquals(doc.get("singleObjectHex").asText(), hex, "encoding of " + file.getFileName());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("vectors")
  void javaDecodesTheVectorBytes(Path file) throws IOException {
    JsonNode doc = JSON.readTree(file.toFile());
    byte[] bytes = HexFormat.of().parseHex(doc.get("singleObjectHex").asText());
    assertEquals(fromJson(doc.get("event")), ResourceSample.getDecoder().decode(bytes),
        "decoding of " + file.getFileName());
  }

  @Test
  void headerIsSingleObjectMarkerAndFingerprint() throws IOException {
    byte[] bytes = toArray(ResourceSample.getEncoder().encode(
        fromJson(JSON.readTree(vectors().findFirst().orElseThrow().toFile()).get("event"))));
    assertEquals((byte) 0xC3, bytes[0]);
    assertEquals((byte) 0x01, bytes[1]);
    long fp = org.apache.avro.SchemaNormalization.parsingFingerprint64(ResourceSample.getClassSchema());
    assertEquals(fp, ByteBuffer.wrap(bytes, 2, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong());
  }

  private static String optText(JsonNode e, String k) {
    return e.get(k).isNull() ? null : e.get(k).asText();
  }

  private static Long optLong(JsonNode e, String k) {
    return e.get(k).isNull() ? null : e.get(k).asLong();
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
        .build();
  }

  private static byte[] toArray(ByteBuffer buf) {
    byte[] out = new byte[buf.remaining()];
    buf.get(out);
    return out;
  }
}
