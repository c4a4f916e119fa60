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
 * The shared byte-level vectors in schemas/test-vectors: the Rust suite checks the same files, so
 * bytes either encoder writes are the bytes the other decodes.
 */
class TestVectorsTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path DIR =
      Path.of(System.getProperty("wattgraph.testVectors", "test-vectors")).resolve("connection-event");

  static Stream<Path> vectors() throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.list(DIR)) {
      files = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
    }
    return files.stream();
  }

  @Test
  void thereAreVectors() throws IOException {
    assertTrue(vectors().count() >= 5, "expected the shared vectors under " + DIR.toAbsolutePath());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("vectors")
  void javaEncodesExactlyTheVectorBytes(Path file) throws IOException {
    JsonNode doc = JSON.readTree(file.toFile());
    ConnectionEvent event = fromJson(doc.get("event"));
    byte[] encoded = toArray(WattgraphSchemas.connectionEventEncoder().encode(event));
    String hex = HexFormat.of().formatHex(encoded);
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
    ConnectionEvent decoded = WattgraphSchemas.connectionEventDecoder().decode(bytes);
    assertEquals(fromJson(doc.get("event")), decoded, "decoding of " + file.getFileName());
  }

  @Test
  void headerIsSingleObjectMarkerAndFingerprint() throws IOException {
    byte[] bytes =
        toArray(WattgraphSchemas.connectionEventEncoder().encode(fromJson(
            JSON.readTree(vectors().findFirst().orElseThrow().toFile()).get("event"))));
    assertEquals((byte) 0xC3, bytes[0]);
    assertEquals((byte) 0x01, bytes[1]);
    long fp = org.apache.avro.SchemaNormalization.parsingFingerprint64(ConnectionEvent.getClassSchema());
    long written = ByteBuffer.wrap(bytes, 2, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    assertEquals(fp, written);
  }

  static ConnectionEvent fromJson(JsonNode e) {
    return ConnectionEvent.newBuilder()
        .setKind(ConnectionEventKind.valueOf(e.get("kind").asText()))
        .setHostId(e.get("hostId").asText())
        .setEventTimeNs(e.get("eventTimeNs").asLong())
        .setLocalAddress(IpAddresses.parse(e.get("localAddress").asText()))
        .setLocalPort(e.get("localPort").asInt())
        .setRemoteAddress(IpAddresses.parse(e.get("remoteAddress").asText()))
        .setRemotePort(e.get("remotePort").asInt())
        .setRole(ConnectionRole.valueOf(e.get("role").asText()))
        .setPid(e.get("pid").asInt())
        .setTgid(e.get("tgid").asInt())
        .setProcessStartTimeNs(e.get("processStartTimeNs").asLong())
        .setComm(e.get("comm").asText())
        .setCmdline(e.get("cmdline").isNull() ? null : e.get("cmdline").asText())
        .setCgroupId(e.get("cgroupId").asLong())
        .setContainerId(e.get("containerId").isNull() ? null : e.get("containerId").asText())
        .setNetnsInode(e.get("netnsInode").asLong())
        .setSocketCookie(e.get("socketCookie").asLong())
        .setBytesSent(e.get("bytesSent").asLong())
        .setBytesReceived(e.get("bytesReceived").asLong())
        .build();
  }

  private static byte[] toArray(ByteBuffer buf) {
    byte[] out = new byte[buf.remaining()];
    buf.get(out);
    return out;
  }
}
