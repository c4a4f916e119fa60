package io.wattgraph.schema;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The checks every folder of shared vectors gets (schemas/test-vectors/NAME/*.json, also checked by
 * the Rust agent's suite): Java encodes each logical record to exactly the vector's bytes and
 * decodes the bytes back to the record, so bytes either side writes are bytes the other reads.
 * Run with -Dwattgraph.writeVectors=true to fill in the bytes of a new vector.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class SharedVectorsTest<T> {

  static final ObjectMapper JSON = new ObjectMapper();

  /** A nullable string field; absent counts as null (fields added later with a null default). */
  static String optText(JsonNode e, String k) {
    JsonNode v = e.get(k);
    return v == null || v.isNull() ? null : v.asText();
  }

  /** podLabels, in key order as the agent writes it; absent counts as the empty default. */
  static Map<String, String> podLabels(JsonNode e) {
    Map<String, String> m = new TreeMap<>();
    JsonNode v = e.get("podLabels");
    if (v != null) {
      v.fields().forEachRemaining(f -> m.put(f.getKey(), f.getValue().asText()));
    }
    return m;
  }

  private final Path dir;
  private final int minimum;
  private final Schema schema;

  SharedVectorsTest(String folder, int minimum, Schema schema) {
    this.dir = Path.of(System.getProperty("wattgraph.testVectors", "test-vectors")).resolve(folder);
    this.minimum = minimum;
    this.schema = schema;
  }

  /** The logical record a vector's "event" object describes. */
  abstract T record(JsonNode event);

  abstract ByteBuffer encode(T record) throws IOException;

  abstract T decode(byte[] bytes) throws IOException;

  Stream<Path> vectors() throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
    }
    return files.stream();
  }

  @Test
  void thereAreVectors() throws IOException {
    assertTrue(vectors().count() >= minimum, "expected the shared vectors under " + dir.toAbsolutePath());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("vectors")
  void javaEncodesExactlyTheVectorBytes(Path file) throws IOException {
    JsonNode doc = JSON.readTree(file.toFile());
    String hex = HexFormat.of().formatHex(toArray(encode(record(doc.get("event")))));
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
    assertEquals(record(doc.get("event")), decode(bytes), "decoding of " + file.getFileName());
  }

  /** The bounded decoder the stream jobs use reads every vector as the message decoder does. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("vectors")
  void recordDecoderDecodesTheVectorBytes(Path file) throws IOException {
    JsonNode doc = JSON.readTree(file.toFile());
    byte[] bytes = HexFormat.of().parseHex(doc.get("singleObjectHex").asText());
    RecordDecoder<?> decoder = WattgraphSchemas.recordDecoder(schema);
    assertEquals(record(doc.get("event")), decoder.decode(bytes), "decoding of " + file.getFileName());
    assertEquals(record(doc.get("event")), decoder.decode(bytes), "again, with the reused decoder");
  }

  @Test
  void headerIsSingleObjectMarkerAndFingerprint() throws IOException {
    byte[] bytes = toArray(encode(record(JSON.readTree(vectors().findFirst().orElseThrow().toFile()).get("event"))));
    assertEquals((byte) 0xC3, bytes[0]);
    assertEquals((byte) 0x01, bytes[1]);
    long written = ByteBuffer.wrap(bytes, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
    assertEquals(SchemaNormalization.parsingFingerprint64(schema), written);
  }

  static byte[] toArray(ByteBuffer buf) {
    byte[] out = new byte[buf.remaining()];
    buf.get(out);
    return out;
  }
}
