package io.wattgraph.stream.window;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.TransactionAddress;
import io.wattgraph.schema.TransactionHistograms;
import io.wattgraph.schema.TransactionNat;
import io.wattgraph.schema.TransactionRole;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.stream.EdgeAccumulator;
import io.wattgraph.stream.LatencyHistogram;
import io.wattgraph.stream.MetricsAccumulator;
import io.wattgraph.stream.StreamJobHarness;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.sink.kafka.EdgeMetricsSerializer;
import io.wattgraph.stream.sink.kafka.WindowMetricsSerializer;
import io.wattgraph.stream.source.Decoded;
import io.wattgraph.stream.source.Endpoints;
import io.wattgraph.stream.source.TransactionStatsDeserializer;
import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.transaction.EdgeMetricsRow;
import io.wattgraph.stream.transaction.EdgeWindowFunction;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.util.ListCollector;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * The merge and percentile math of the transaction windows, against values computed by hand from
 * the bucket scheme (s = 7): a value v < 256 is its own bucket; else with e = floor(log2 v) the
 * bucket spans [(128 + m) << (e - 7), + 2^(e-7) - 1] and is reported at its midpoint.
 */
public class TransactionMathTest {
  static final int S7 = 7;

  /** Bucket 506 = 1000 ns: e = 9, m = (1000 >> 2) & 127 = 122, b = (3 << 7) | 122; spans [1000, 1003]. */
  static final int B1000 = 506;
  /** Bucket 1780 = 1 ms: e = 19, m = (10^6 >> 12) & 127 = 116, b = (13 << 7) | 116; spans [999424, 1003519]. */
  static final int B1MS = 1780;

  @Test
  void handComputedBucketsAreTheSchemesBuckets() {
    assertEquals(B1000, TransactionHistograms.bucketOf(1000, S7));
    assertEquals(1000, TransactionHistograms.lowerBound(B1000, S7));
    assertEquals(1003, TransactionHistograms.upperBound(B1000, S7));
    assertEquals(B1MS, TransactionHistograms.bucketOf(1_000_000, S7));
    assertEquals(999_424, TransactionHistograms.lowerBound(B1MS, S7));
    assertEquals(1_003_519, TransactionHistograms.upperBound(B1MS, S7));
  }

  @Test
  void mergeAddsCountsOfEqualBucketsInAnyOrder() {
    LatencyHistogram a = LatencyHistogram.of(new int[] {1, 300}, new long[] {2, 1});
    a.add(new int[] {1, 200, 400}, new long[] {1, 4, 1});
    assertArrayEquals(new int[] {1, 200, 300, 400}, a.buckets);
    assertArrayEquals(new long[] {3, 4, 1, 1}, a.counts);

    LatencyHistogram b = LatencyHistogram.of(new int[] {1, 200, 400}, new long[] {1, 4, 1});
    b.add(LatencyHistogram.of(new int[] {1, 300}, new long[] {2, 1}));
    assertArrayEquals(a.buckets, b.buckets);
    assertArrayEquals(a.counts, b.counts);
    // The schema module's reference merge agrees.
    TransactionHistograms.Histogram ref = new TransactionHistograms.Histogram(S7)
        .add(List.of(1, 300), List.of(2L, 1L)).add(List.of(1, 200, 400), List.of(1L, 4L, 1L));
    assertEquals(ref.buckets(), List.of(1, 200, 300, 400));
    assertEquals(ref.counts(), List.of(3L, 4L, 1L, 1L));
    assertThrows(IllegalArgumentException.class, () -> a.add(new int[] {1}, new long[0]));
  }

  /**
   * Records whose buckets the histogram has already are added in place, the others merged into new
   * arrays: either way the result is the reference merge's, and the records' arrays are neither
   * changed nor kept.
   */
  @Test
  void mergeInPlaceOrIntoNewArraysAgreesWithTheReferenceAndKeepsNoInput() {
    java.util.Random random = new java.util.Random(42);
    LatencyHistogram h = new LatencyHistogram();
    TransactionHistograms.Histogram ref = new TransactionHistograms.Histogram(S7);
    for (int r = 0; r < 500; r++) {
      // Mostly buckets among the first 12 (soon all known: in place), now and then a new one.
      java.util.TreeMap<Integer, Long> record = new java.util.TreeMap<>();
      int n = 1 + random.nextInt(6);
      for (int k = 0; k < n; k++) {
        int bucket = random.nextInt(20) == 0 ? 100 + random.nextInt(2_000) : 10 * random.nextInt(12);
        record.merge(bucket, 1L + random.nextInt(50), Long::sum);
      }
      int[] b = record.keySet().stream().mapToInt(Integer::intValue).toArray();
      long[] c = record.values().stream().mapToLong(Long::longValue).toArray();
      int[] bBefore = b.clone();
      long[] cBefore = c.clone();
      h.add(b, c);
      ref.add(java.util.Arrays.stream(b).boxed().toList(), java.util.Arrays.stream(c).boxed().toList());
      assertArrayEquals(bBefore, b);
      assertArrayEquals(cBefore, c);
      assertTrue(h.buckets != b && h.counts != c, "record " + r + ": the histogram kept the record's arrays");
      assertEquals(ref.buckets(), java.util.Arrays.stream(h.buckets).boxed().toList(), "record " + r);
      assertEquals(ref.counts(), java.util.Arrays.stream(h.counts).boxed().toList(), "record " + r);
    }
  }

  /**
   * 50 x 100 ns, 40 x 1000 ns, 10 x 1 ms in three records (merged out of order). Nearest rank:
   * p50 = rank 50 -> 100 ns (exact bucket); p75 = rank 75, p90 = rank 90 -> bucket 506, midpoint
   * 1000 + 3/2 = 1001; p99 = rank 99 -> bucket 1780, midpoint 999424 + 4095/2 = 1001471 (true
   * value 10^6: 0.147 % off, within 2^-8). Mean at midpoints: (50*100 + 40*1001 + 10*1001471)/100
   * = 100597.5.
   */
  @Test
  void percentilesOfTheMergedHistogramByHand() {
    LatencyHistogram h = LatencyHistogram.of(new int[] {B1MS}, new long[] {10});
    h.add(new int[] {100}, new long[] {50});
    h.add(new int[] {B1000}, new long[] {40});
    LatencyStats st = h.stats(S7);
    assertEquals(100L, st.p50Ns);
    assertEquals(1001L, st.p75Ns);
    assertEquals(1001L, st.p90Ns);
    assertEquals(1_001_471L, st.p99Ns);
    assertEquals(100_597.5, st.meanNs, 1e-9);
    assertTrue(Math.abs(st.p99Ns - 1_000_000) <= 1_000_000 / 256.0);

    LatencyStats empty = new LatencyHistogram().stats(S7);
    assertNull(empty.meanNs);
    assertNull(empty.p50Ns);
  }

  /**
   * A server process, window 10 s: 2 CPU seconds, at most 4 threads, 100 transactions served.
   * cpuCores = 0.2; U = 0.2 / min(cores unknown, 4) = 0.05 (PowerThesis Eq. 3.3); lambda = 10/s, D = U / lambda =
   * 0.005 s (Eq. 3.4); saturation rate 1 / D = 200/s (Eq. 3.5 per entity).
   */
  /** A ResourceSample input of process h/1/2 (hostCores 0: reported by a v1 agent). */
  private static MetricInput cpuSample(long intervalEndNs, long cpuTimeNs, int threads, int hostCores) {
    MetricInput m = new MetricInput();
    m.level = MetricInput.PROCESS;
    m.hostId = "h";
    m.entityId = "h/1/2";
    m.intervalEndNs = intervalEndNs;
    m.cpuTimeNs = cpuTimeNs;
    m.threads = threads;
    m.hostCores = hostCores;
    return m;
  }

  @Test
  void operationalAnalysisByHand() {
    MetricsAccumulator acc = new MetricsAccumulator();
    acc.add(cpuSample(5, 2_000_000_000L, 4, 0));
    Transaction server = tx("SERVER", 60, new int[] {100}, new long[] {60});
    Transaction server2 = tx("SERVER", 40, new int[] {100, B1000}, new long[] {10, 30});
    Transaction client = tx("CLIENT", 7, new int[] {B1MS}, new long[] {7});
    for (Transaction t : List.of(server, client, server2)) {
      acc.add(MetricInput.ofTransaction(t, MetricInput.PROCESS, "h/1/2", "host", null));
    }
    MetricsRow r = EntityWindowFunction.row(acc, new TimeWindow(0, 10_000), 0);
    assertEquals(0.2, r.cpuCores, 1e-12);
    assertEquals(0.05, r.utilization, 1e-12);
    assertEquals(0.005, r.serviceDemandSeconds, 1e-12);
    assertEquals(200.0, r.saturationRate, 1e-9);
    assertEquals(100, r.tx.serverTransactions);
    assertEquals(7, r.tx.clientTransactions);
    assertEquals(100 * 100, r.tx.serverRequestBytes, "100 bytes per transaction by tx()");
    assertEquals(1, r.samples, "transactions are not samples");
    // Server times: 70 x 100 ns, 30 x 1000 ns: p50 rank 50 -> 100; p75 rank 75 -> 1001; p99 -> 1001.
    assertEquals(100L, r.serverTime.p50Ns);
    assertEquals(1001L, r.serverTime.p75Ns);
    assertEquals(1001L, r.serverTime.p99Ns);
    assertEquals(1_001_471L, r.clientRtt.p50Ns);
    var avro = WindowMetricsSerializer.toAvro(r);
    assertEquals(10.0, avro.getServerRequestRate(), 1e-12);
    assertEquals(0.7, avro.getClientRequestRate(), 1e-12);
    assertEquals(List.of(100, B1000), avro.getServerTimeBuckets());
    assertEquals(List.of(70L, 30L), avro.getServerTimeCounts());

    assertNull(r.hostCores, "no agent reported the host's cores");

    // The same on a 2-core host (ResourceSample v2): U = 0.2 / min(2, 4) = 0.1, D = 0.01 s,
    // saturation 100/s; the host-core share 0.2 / 2. The highest report of the window counts.
    MetricsAccumulator onTwo = new MetricsAccumulator();
    MetricsAccumulator part = new MetricsAccumulator();
    part.add(cpuSample(4, 0, 1, 0)); // a v1 report in the same window: cores unknown there
    onTwo.add(cpuSample(5, 2_000_000_000L, 4, 2));
    onTwo.merge(part);
    onTwo.add(MetricInput.ofTransaction(server, MetricInput.PROCESS, "h/1/2", "host", null));
    onTwo.add(MetricInput.ofTransaction(server2, MetricInput.PROCESS, "h/1/2", "host", null));
    MetricsRow r2 = EntityWindowFunction.row(onTwo, new TimeWindow(0, 10_000), 0);
    assertEquals(2, r2.hostCores);
    assertEquals(0.1, r2.hostCpuShare, 1e-12);
    assertEquals(0.1, r2.utilization, 1e-12);
    assertEquals(0.01, r2.serviceDemandSeconds, 1e-12);
    assertEquals(100.0, r2.saturationRate, 1e-9);
    assertEquals(2, WindowMetricsSerializer.toAvro(r2).getHostCores());

    // Without transactions served: no service demand; without samples: no utilization either.
    MetricsAccumulator clientOnly = new MetricsAccumulator();
    clientOnly.add(MetricInput.ofTransaction(client, MetricInput.PROCESS, "h/1/2", null, null));
    MetricsRow c = EntityWindowFunction.row(clientOnly, new TimeWindow(0, 10_000), 0);
    assertNull(c.utilization);
    assertNull(c.serviceDemandSeconds);
    assertEquals(0, c.samples);
    assertNull(WindowMetricsSerializer.toAvro(c).getUtilization());
    MetricsRow none = EntityWindowFunction.row(acc0(), new TimeWindow(0, 10_000), 0);
    assertNull(none.tx);
    assertNull(WindowMetricsSerializer.toAvro(none).getServerTransactions());
  }

  /**
   * An edge: client RTTs 20 x 300 us, 10 x 2 ms, 10 x 5 ms (true mean 1.9 ms); server times 20 x
   * 100 us, 10 x 1.5 ms, 10 x 4 ms (true mean 1.425 ms). Network time = mean RTT - mean server time
   * = 475 us, within (1.9 + 1.425) ms / 256 of the midpoint-based figure. Percentiles: RTT p50 rank
   * 20 -> 300 us, p75 rank 30 -> 2 ms, p90 rank 36 and p99 rank 40 -> 5 ms.
   */
  @Test
  void edgeNetworkTimeAndRates() {
    EdgeAccumulator acc = new EdgeAccumulator();
    acc.add(edge(tx("CLIENT", 30, buckets(300_000, 2_000_000), new long[] {20, 10})));
    acc.add(edge(tx("SERVER", 40, buckets(100_000, 1_500_000, 4_000_000), new long[] {20, 10, 10})));
    acc.add(edge(tx("CLIENT", 10, buckets(5_000_000), new long[] {10})));
    EdgeMetricsRow r = EdgeWindowFunction.row(acc, new TimeWindow(0, 10_000), 0);
    assertEquals(4.0, r.requestRate, 1e-12);
    assertEquals(4000, r.requestBytes);
    assertEquals(40, r.tx.clientTransactions);
    assertEquals(40, r.tx.serverTransactions);
    within(300_000, r.clientRtt.p50Ns);
    within(2_000_000, r.clientRtt.p75Ns);
    within(5_000_000, r.clientRtt.p90Ns);
    within(5_000_000, r.clientRtt.p99Ns);
    within(100_000, r.serverTime.p50Ns);
    within(1_500_000, r.serverTime.p75Ns);
    within(4_000_000, r.serverTime.p99Ns);
    assertTrue(Math.abs(r.networkTimeMeanNs - 475_000) <= (1_900_000 + 1_425_000) / 256.0, String.valueOf(r.networkTimeMeanNs));
    // Only one end: no network time; the rate is that end's.
    EdgeAccumulator one = new EdgeAccumulator();
    one.add(edge(tx("CLIENT", 30, buckets(300_000, 2_000_000), new long[] {20, 10})));
    EdgeMetricsRow o = EdgeWindowFunction.row(one, new TimeWindow(0, 10_000), 0);
    assertNull(o.networkTimeMeanNs);
    assertNull(o.serverTime.p50Ns);
    assertEquals(3.0, o.requestRate, 1e-12);
    assertNull(EdgeMetricsSerializer.toAvro(o).getNetworkTimeMeanNs());
  }

  @Test
  void invalidRecordsAreNamed() {
    TransactionStats ok = stats();
    assertNull(TransactionStatsDeserializer.invalidReason(ok));
    TransactionStats s5 = stats();
    s5.setSubBucketBits(5);
    assertEquals("invalid: subBucketBits 5 (only 7 can be merged)", TransactionStatsDeserializer.invalidReason(s5));
    TransactionStats unsorted = stats();
    unsorted.setServerTimeBuckets(List.of(9, 3));
    unsorted.setServerTimeCounts(List.of(1L, 1L));
    assertEquals("invalid: serverTime buckets not strictly ascending and non-negative at index 1",
        TransactionStatsDeserializer.invalidReason(unsorted));
    TransactionStats wrongSide = stats();
    wrongSide.setClientRttBuckets(List.of(1));
    wrongSide.setClientRttCounts(List.of(1L));
    assertEquals("invalid: SERVER record with a clientRtt histogram", TransactionStatsDeserializer.invalidReason(wrongSide));
    TransactionStats negative = stats();
    negative.setTransactions(-1);
    assertTrue(TransactionStatsDeserializer.invalidReason(negative).startsWith("invalid: negative count"));
    TransactionStats noConnection = stats();
    noConnection.setConnections(0);
    assertEquals("invalid: connections 0 (at least 1)", TransactionStatsDeserializer.invalidReason(noConnection));
    Transaction t = TransactionStatsDeserializer.toTransaction(ok);
    assertEquals("10.0.0.2", t.localIp);
    assertEquals("10.0.0.1:40000|10.0.0.2:8080", t.connectionKey());
    assertEquals("h/7/9", t.processId());
  }

  /** A CLIENT record towards Service VIP 10.96.0.10:80 whose kernel applied DNAT to 10.244.2.9:8080 and SNAT. */
  static TransactionStats natClient() {
    return TransactionStats.newBuilder(stats()).setRole(TransactionRole.CLIENT)
        .setLocalAddress(address("10.244.1.5")).setLocalPort(43210)
        .setRemoteAddress(address("10.96.0.10")).setRemotePort(80)
        .setServerTimeBuckets(List.of()).setServerTimeCounts(List.of())
        .setClientRttBuckets(List.of(3, 9)).setClientRttCounts(List.of(1L, 1L))
        .setNat(TransactionNat.newBuilder().setLocalAddress(address("192.0.2.7")).setLocalPort(61000)
            .setRemoteAddress(address("10.244.2.9")).setRemotePort(8080).build())
        .build();
  }

  static TransactionAddress address(String ip) {
    return new TransactionAddress(IpAddresses.parse(ip).bytes());
  }

  @Test
  void aTranslatedClientRecordHasTheEndpointsItsPeerSees() {
    TransactionStats r = natClient();
    assertNull(TransactionStatsDeserializer.invalidReason(r));
    Transaction t = TransactionStatsDeserializer.toTransaction(r);
    assertEquals("192.0.2.7", t.localIp);
    assertEquals(61000, t.localPort);
    assertEquals("10.244.2.9", t.remoteIp);
    assertEquals(8080, t.remotePort);
    // The backend's SERVER record of the same connection meets it.
    TransactionStats server = TransactionStats.newBuilder(stats())
        .setLocalAddress(address("10.244.2.9")).setLocalPort(8080)
        .setRemoteAddress(address("192.0.2.7")).setRemotePort(61000).build();
    assertEquals(TransactionStatsDeserializer.toTransaction(server).connectionKey(), t.connectionKey());

    r.setNat(null);
    t = TransactionStatsDeserializer.toTransaction(r);
    assertEquals("10.244.1.5:43210|10.96.0.10:80", Endpoints.of(t.localIp, t.localPort) + "|" + Endpoints.of(t.remoteIp, t.remotePort));
  }

  @Test
  void aMergedTranslatedClientRecordKeepsClientPortZero() {
    TransactionStats r = natClient();
    r.setLocalPort(0);
    r.setSocketCookie(0);
    r.setClosed(true);
    r.setConnections(3);
    r.getNat().setLocalAddress(address("10.244.1.5")); // DNAT only
    r.getNat().setLocalPort(0);
    assertNull(TransactionStatsDeserializer.invalidReason(r));
    Transaction t = TransactionStatsDeserializer.toTransaction(r);
    assertEquals("10.244.1.5", t.localIp);
    assertEquals(0, t.localPort);
    assertEquals("10.244.2.9", t.remoteIp);
    assertEquals(8080, t.remotePort);
  }

  @Test
  void invalidNatIsNamed() {
    TransactionStats r = natClient();
    r.getNat().setRemotePort(70000);
    assertEquals("invalid: nat.remotePort 70000 out of range 0..65535", TransactionStatsDeserializer.invalidReason(r));
    r.getNat().setRemotePort(8080);
    r.getNat().setLocalPort(-1);
    assertEquals("invalid: nat.localPort -1 out of range 0..65535", TransactionStatsDeserializer.invalidReason(r));
    r.getNat().setLocalPort(61000);
    r.getNat().setLocalAddress(null);
    assertEquals("invalid: missing nat.localAddress", TransactionStatsDeserializer.invalidReason(r));
    r.getNat().setLocalAddress(address("192.0.2.7"));
    r.getNat().setRemoteAddress(null);
    assertEquals("invalid: missing nat.remoteAddress", TransactionStatsDeserializer.invalidReason(r));
  }

  @Test
  void theDeserializerTurnsAnInvalidNatIntoADeadLetter() throws Exception {
    TransactionStats r = natClient();
    r.getNat().setLocalPort(65536);
    List<Decoded<Transaction>> out = new ArrayList<>();
    new TransactionStatsDeserializer().deserialize(new ConsumerRecord<>("t", 0, 5L, new byte[0],
        StreamJobHarness.bytes(TransactionStats.getEncoder().encode(r))), new ListCollector<>(out));
    assertEquals(1, out.size());
    assertNull(out.get(0).value);
    assertEquals("invalid: nat.localPort 65536 out of range 0..65535", out.get(0).deadLetter.reason);
  }

  static TransactionStats stats() {
    return TransactionStats.newBuilder().setHostId("h").setIntervalStartNs(1).setIntervalEndNs(2)
        .setRole(TransactionRole.SERVER)
        .setLocalAddress(new TransactionAddress(IpAddresses.parse("10.0.0.2").bytes())).setLocalPort(8080)
        .setRemoteAddress(new TransactionAddress(IpAddresses.parse("10.0.0.1").bytes())).setRemotePort(40000)
        .setTgid(7).setProcessStartTimeNs(9).setComm("srv").setCgroupId(1).setNetnsInode(2).setSocketCookie(3)
        .setClosed(false).setTransactions(2).setRequestBytes(10).setResponseBytes(20)
        .setServerTimeBuckets(List.of(3, 9)).setServerTimeCounts(List.of(1L, 1L)).build();
  }

  static MetricsAccumulator acc0() {
    MetricsAccumulator a = new MetricsAccumulator();
    MetricInput cpu = new MetricInput();
    cpu.level = MetricInput.HOST;
    cpu.hostId = "h";
    cpu.entityId = "h";
    cpu.cpuTimeNs = 1;
    a.add(cpu);
    return a;
  }

  static int[] buckets(long... ns) {
    int[] b = new int[ns.length];
    for (int i = 0; i < ns.length; i++) {
      b[i] = TransactionHistograms.bucketOf(ns[i], S7);
    }
    return b;
  }

  /** A record with 100 request and 1000 response bytes per transaction. */
  public static Transaction tx(String role, long n, int[] buckets, long[] counts) {
    Transaction t = new Transaction();
    t.hostId = "h";
    t.role = role;
    t.transactions = n;
    t.requestBytes = 100 * n;
    t.responseBytes = 1000 * n;
    t.subBucketBits = S7;
    t.buckets = buckets;
    t.counts = counts;
    return t;
  }

  static EdgeInput edge(Transaction t) {
    EdgeInput e = new EdgeInput();
    e.clientKind = EdgeInput.PROCESS;
    e.clientId = "a/1/1";
    e.serverKind = EdgeInput.PROCESS;
    e.serverId = "b/2/2";
    e.transaction = t;
    return e;
  }

  /** The reported percentile is in the true value's bucket, so within 2^-8 of it. */
  static void within(long trueNs, Long reported) {
    assertEquals(TransactionHistograms.bucketOf(trueNs, S7), TransactionHistograms.bucketOf(reported, S7),
        "bucket of " + reported + " vs " + trueNs);
    assertTrue(Math.abs(reported - trueNs) <= trueNs / 256.0, reported + " vs " + trueNs);
  }

  static void assertTrue(boolean b, String msg) {
    org.junit.jupiter.api.Assertions.assertTrue(b, msg);
  }

  static void assertTrue(boolean b) {
    org.junit.jupiter.api.Assertions.assertTrue(b);
  }
}
