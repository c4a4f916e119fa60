package io.wattgraph.schema;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The shared TransactionStats vectors in schemas/test-vectors/transaction-stats, also checked by
 * the Rust agent's suite (node-agent/tests/transaction_vectors.rs), and the bucket scheme helper.
 */
class TransactionStatsVectorsTest extends SharedVectorsTest<TransactionStats> {

  TransactionStatsVectorsTest() {
    super("transaction-stats", 7, TransactionStats.getClassSchema());
  }

  @Override
  TransactionStats record(JsonNode event) {
    return fromJson(event);
  }

  @Override
  ByteBuffer encode(TransactionStats r) throws IOException {
    return TransactionStats.getEncoder().encode(r);
  }

  @Override
  TransactionStats decode(byte[] b) throws IOException {
    return WattgraphSchemas.transactionStatsDecoder().decode(b);
  }

  @Test
  void bucketSchemeBoundsAndErrorMatchTheAgent() {
    int s = 7;
    // Same points as the agent's unit tests (node-agent/src/capture/connections/transactions.rs).
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
    assertEquals(66, h.total()); // 01: 30 and 07: 3 round trips, each added twice
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
        .setHttpRoutes(routes(e.get("httpRoutes")))
        .setConnections(e.has("connections") ? e.get("connections").asLong() : 1L) // optional: the schema default
        .setNat(nat(e.get("nat")))
        .build();
  }

  /** Optional in the JSON (added in v4): absent or null means no translation. */
  private static TransactionNat nat(JsonNode n) {
    if (n == null || n.isNull()) {
      return null;
    }
    return TransactionNat.newBuilder()
        .setLocalAddress(new TransactionAddress(IpAddresses.parse(n.get("localAddress").asText()).bytes()))
        .setLocalPort(n.get("localPort").asInt())
        .setRemoteAddress(new TransactionAddress(IpAddresses.parse(n.get("remoteAddress").asText()).bytes()))
        .setRemotePort(n.get("remotePort").asInt())
        .build();
  }

  /** Optional in the JSON: absent means the schema default (no routes). */
  private static List<HttpRouteStats> routes(JsonNode a) {
    List<HttpRouteStats> out = new ArrayList<>();
    if (a != null) {
      a.forEach(r -> out.add(HttpRouteStats.newBuilder()
          .setMethod(r.get("method").asText())
          .setPath(r.get("path").asText())
          .setPathTruncated(r.get("pathTruncated").asBoolean())
          .setTransactions(r.get("transactions").asLong())
          .setLatencyBuckets(ints(r.get("latencyBuckets")))
          .setLatencyCounts(longs(r.get("latencyCounts")))
          .build()));
    }
    return out;
  }

}
