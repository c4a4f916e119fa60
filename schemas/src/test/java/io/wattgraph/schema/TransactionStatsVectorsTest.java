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
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The shared TransactionStats vectors in schemas/test-vectors/transaction-stats, also checked by
 * the Rust agent's suite (node-agent/tests/transaction_vectors.rs), and the bucket scheme helper.
 */
class TransactionStatsVectorsTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path DIR =
      Path.of(System.getProperty("wattgraph.testVectors", "test-vectors")).resolve("transaction-stats");

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
    String hex = HexFormat.of().formatHex(toArray(TransactionStats.getEncoder().encode(fromJson(doc.get("event")))));
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
    assertEquals(fromJson(doc.get("event")), TransactionStats.getDecoder().decode(bytes),
        "decoding of " + file.getFileName());
  }

  @Test
  void headerIsSingleObjectMarkerAndFingerprint() throws IOException {
    byte[] bytes = toArray(TransactionStats.getEncoder().encode(
        fromJson(JSON.readTree(vectors().findFirst().orElseThrow().toFile()).get("event"))));
    assertEquals((byte) 0xC3, bytes[0]);
    assertEquals((byte) 0x01, bytes[1]);
    long fp = org.apache.avro.SchemaNormalization.parsingFingerprint64(TransactionStats.getClassSchema());
    assertEquals(fp, ByteBuffer.wrap(bytes, 2, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong());
  }

  @Test
  void bucketSchemeBoundsAndErrorMatchTheAgent() {
    int s = 7;
    // Same points as the agent's unit tests (node-agent/src/transactions.rs).
    assertEquals(255, TransactionHistograms.bucketOf(255, s));
    assertEquals(256, TransactionHistograms.bucketOf(257, s));
    assertEquals(4_980_736L, TransactionHistograms.lowerBound(TransactionHistograms.bucketOf(5_000_000, s), s));
    assertEquals(7423, TransactionHistograms.bucketOf(-1L, s)); // u64::MAX
    int prev = 0;
    for (double x = 1; x < 9e18; x *= 1.01) {
      long v = (long) x;
      int b = TransactionHistograms.bucketOf(v, s);
      assertTrue(b >= prev, "monotonic at " + v);
      prev = b;
      long lo = TransactionHistograms.lowerBound(b, s);
      long hi = TransactionHistograms.upperBound(b, s);
      assertTrue(lo <= v && v <= hi, v + " in [" + lo + ", " + hi + "]");
      assertTrue((double) (v - lo) / v <= 1.0 / 128, "relative error at " + v);
    }
    for (int b = 0; b < 7422; b++) {
      assertEquals(TransactionHistograms.upperBound(b, s) + 1, TransactionHistograms.lowerBound(b + 1, s), "gap after " + b);
    }
  }

  @Test
  void mergeAndPercentiles() throws IOException {
    var h = new TransactionHistograms.Histogram(7);
    for (Path f : vectors().toList()) {
      TransactionStats r = fromJson(JSON.readTree(f.toFile()).get("event"));
      if (r.getRole() == TransactionRole.CLIENT) {
        h.add(r);
        h.add(r); // merging a record twice doubles every count
      }
    }
    assertEquals(60, h.total());
    int b5 = TransactionHistograms.bucketOf(5_000_000, 7);
    assertTrue(h.percentileBucket(0.5) >= b5 && h.percentileBucket(0.5) < TransactionHistograms.bucketOf(20_000_000, 7));
    assertTrue(TransactionHistograms.upperBound(h.percentileBucket(0.9), 7) >= 20_000_000);
    long p50 = h.percentile(0.5);
    assertTrue(Math.abs(p50 - 5_538_000) / 5_538_000.0 <= 1.0 / 256, "p50 " + p50);
    var e = new TransactionHistograms.Histogram(7);
    assertEquals(-1, e.percentileBucket(0.5));
  }

  private static List<Integer> ints(JsonNode a) {
    List<Integer> out = new ArrayList<>();
    a.forEach(x -> out.add(x.asInt()));
    return out;
  }

  private static List<Long> longs(JsonNode a) {
    List<Long> out = new ArrayList<>();
    a.forEach(x -> out.add(x.asLong()));
    return out;
  }

  static TransactionStats fromJson(JsonNode e) {
    return TransactionStats.newBuilder()
        .setHostId(e.get("hostId").asText())
        .setIntervalStartNs(e.get("intervalStartNs").asLong())
        .setIntervalEndNs(e.get("intervalEndNs").asLong())
        .setRole(TransactionRole.valueOf(e.get("role").asText()))
        .setLocalAddress(new TransactionAddress(IpAddresses.parse(e.get("localAddress").asText()).bytes()))
        .setLocalPort(e.get("localPort").asInt())
        .setRemoteAddress(new TransactionAddress(IpAddresses.parse(e.get("remoteAddress").asText()).bytes()))
        .setRemotePort(e.get("remotePort").asInt())
        .setTgid(e.get("tgid").asInt())
        .setProcessStartTimeNs(e.get("processStartTimeNs").asLong())
        .setComm(e.get("comm").asText())
        .setCgroupId(e.get("cgroupId").asLong())
        .setNetnsInode(e.get("netnsInode").asLong())
        .setSocketCookie(e.get("socketCookie").asLong())
        .setClosed(e.get("closed").asBoolean())
        .setTransactions(e.get("transactions").asLong())
        .setRequestBytes(e.get("requestBytes").asLong())
        .setResponseBytes(e.get("responseBytes").asLong())
        .setSubBucketBits(e.get("subBucketBits").asInt())
        .setClientRttBuckets(ints(e.get("clientRttBuckets")))
        .setClientRttCounts(longs(e.get("clientRttCounts")))
        .setServerTimeBuckets(ints(e.get("serverTimeBuckets")))
        .setServerTimeCounts(longs(e.get("serverTimeCounts")))
        .build();
  }

  private static byte[] toArray(ByteBuffer buf) {
    byte[] out = new byte[buf.remaining()];
    buf.get(out);
    return out;
  }
}
