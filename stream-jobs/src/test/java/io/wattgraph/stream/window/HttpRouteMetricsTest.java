package io.wattgraph.stream.window;

import static io.wattgraph.stream.window.TransactionMathTest.B1000;
import static io.wattgraph.stream.window.TransactionMathTest.B1MS;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.HttpRouteRole;
import io.wattgraph.schema.HttpRouteStats;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.schema.WindowHttpRoute;
import io.wattgraph.schema.WindowMetrics;
import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.HttpRoute;
import io.wattgraph.stream.HttpRouteTotals;
import io.wattgraph.stream.JobConfig;
import io.wattgraph.stream.MetricsAccumulator;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.sink.kafka.WindowMetricsSerializer;
import io.wattgraph.stream.sink.neo4j.NodeMetricsGraphWriter;
import io.wattgraph.stream.source.TransactionStatsDeserializer;
import io.wattgraph.stream.transaction.ProcessGroups;
import io.wattgraph.stream.transaction.TransactionJoinsTest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * Per-route HTTP metrics of the entity windows, against values computed by hand (bucket scheme
 * s = 7: a value below 256 ns is its own bucket; {@link TransactionMathTest#B1000} = 1000 ns,
 * midpoint 1001; {@link TransactionMathTest#B1MS} = 1 ms, midpoint 1001471). Window 10 s.
 */
class HttpRouteMetricsTest {
  static final TimeWindow W = new TimeWindow(0, 10_000);
  static final String USERS = "/users/{id}";

  @Test
  void twoRecordsWithOverlappingRoutesMergeExactly() {
    MetricsAccumulator acc = new MetricsAccumulator();
    // Record 1: GET /users/{id} 3 x (2 x 100 ns, 1 x 1000 ns), POST /upload 1 x 1 ms.
    Transaction first = record("SERVER", route("SERVER", "GET", USERS, 3, new int[] {100, B1000}, new long[] {2, 1}),
        route("SERVER", "POST", "/upload", 1, new int[] {B1MS}, new long[] {1}));
    // Record 2: GET /users/{id} 2 x (100 ns, 1 ms), GET /health 4 x 50 ns.
    Transaction second = record("SERVER", route("SERVER", "GET", USERS, 2, new int[] {100, B1MS}, new long[] {1, 1}),
        route("SERVER", "GET", "/health", 4, new int[] {50}, new long[] {4}));
    // One record feeds several levels' windows (ProcessGroups): a second window merging the same
    // objects must neither change them nor see another window's sums.
    MetricsAccumulator other = new MetricsAccumulator();
    for (Transaction t : List.of(first, second)) {
      add(acc, t);
      add(other, t);
    }
    assertEquals(3, first.httpRoutes[0].transactions, "the input is not changed");
    assertArrayEquals(new long[] {2, 1}, first.httpRoutes[0].latency.counts);
    assertEquals(keys(EntityWindowFunction.row(other, W, 0)), keys(EntityWindowFunction.row(acc, W, 0)));
    assertEquals(5, EntityWindowFunction.row(other, W, 0).httpRoutes[0].route.transactions);
    MetricsRow r = EntityWindowFunction.row(acc, W, 0);

    assertEquals(List.of("SERVER GET " + USERS, "SERVER GET /health", "SERVER POST /upload"), keys(r));
    HttpRouteRow users = r.httpRoutes[0];
    // GET /users/{id}: 5 transactions: 3 x 100 ns, 1 x 1000 ns, 1 x 1 ms. Nearest rank: p50 = rank 3
    // -> 100; p90 = rank ceil(4.5) = 5 and p99 = rank 5 -> 1 ms bucket, midpoint 1001471.
    // Mean at midpoints: (3 x 100 + 1001 + 1001471) / 5 = 200554.4. Rate 5 / 10 s.
    assertEquals(5, users.route.transactions);
    assertArrayEquals(new int[] {100, B1000, B1MS}, users.route.latency.buckets);
    assertArrayEquals(new long[] {3, 1, 1}, users.route.latency.counts);
    assertEquals(100L, users.latency.p50Ns);
    assertEquals(1_001_471L, users.latency.p90Ns);
    assertEquals(1_001_471L, users.latency.p99Ns);
    assertEquals(200_554.4, users.latency.meanNs, 1e-9);
    assertEquals(0.5, users.requestRate, 1e-12);
    assertEquals(4, r.httpRoutes[1].route.transactions);
    assertEquals(50L, r.httpRoutes[1].latency.p99Ns);
    assertEquals(1_001_471L, r.httpRoutes[2].latency.p50Ns);

    // The same in Avro and as the graph's parallel lists.
    WindowMetrics avro = WindowMetricsSerializer.toAvro(r);
    WindowHttpRoute a = avro.getHttpRoutes().get(0);
    assertEquals(HttpRouteRole.SERVER, a.getRole());
    assertEquals("GET", a.getMethod());
    assertEquals(USERS, a.getPath());
    assertEquals(false, a.getPathTruncated());
    assertEquals(5L, a.getTransactions());
    assertEquals(0.5, a.getRequestRate(), 1e-12);
    assertEquals(200_554.4, a.getLatencyMeanNs(), 1e-9);
    assertEquals(100L, a.getLatencyP50Ns());
    assertEquals(1_001_471L, a.getLatencyP90Ns());
    assertEquals(1_001_471L, a.getLatencyP99Ns());
    assertEquals(List.of(100, B1000, B1MS), a.getLatencyBuckets());
    assertEquals(List.of(3L, 1L, 1L), a.getLatencyCounts());
    assertEquals(3, avro.getHttpRoutes().size());
    Map<String, Object> m = new HashMap<>();
    NodeMetricsGraphWriter.putHttpRoutes(m, r.httpRoutes);
    assertEquals(List.of("SERVER GET " + USERS, "SERVER GET /health", "SERVER POST /upload"), m.get("httpRouteKeys"));
    assertEquals(List.of(5L, 4L, 1L), m.get("httpRouteTransactions"));
    assertEquals(List.of(0.5, 0.4, 0.1), m.get("httpRouteRates"));
    assertEquals(List.of(100L, 50L, 1_001_471L), m.get("httpRouteP50Ns"));
    assertEquals(List.of(1_001_471L, 50L, 1_001_471L), m.get("httpRouteP90Ns"));
    assertEquals(List.of(1_001_471L, 50L, 1_001_471L), m.get("httpRouteP99Ns"));
    assertEquals(200_554.4, ((List<?>) m.get("httpRouteMeanNs")).get(0));
  }

  @Test
  void clientAndServerRoutesStayApartAndTruncatedPathsAreTheirOwnRoute() {
    MetricsAccumulator acc = new MetricsAccumulator();
    add(acc, record("SERVER", route("SERVER", "GET", USERS, 2, new int[] {100}, new long[] {2})));
    add(acc, record("CLIENT", route("CLIENT", "GET", USERS, 1, new int[] {B1MS}, new long[] {1})));
    HttpRoute truncated = route("SERVER", "GET", USERS, 1, new int[] {200}, new long[] {1});
    truncated.pathTruncated = true;
    add(acc, record("SERVER", truncated));
    MetricsRow r = EntityWindowFunction.row(acc, W, 0);
    assertEquals(List.of("CLIENT GET " + USERS, "SERVER GET " + USERS, "SERVER GET " + USERS + "…"), keys(r));
    assertEquals(1_001_471L, r.httpRoutes[0].latency.p50Ns, "client round trips only");
    assertEquals(2, r.httpRoutes[1].route.transactions);
    assertEquals(100L, r.httpRoutes[1].latency.p99Ns, "server times only");
    assertEquals(HttpRouteRole.CLIENT, WindowMetricsSerializer.toAvro(r).getHttpRoutes().get(0).getRole());
    assertTrue(WindowMetricsSerializer.toAvro(r).getHttpRoutes().get(2).getPathTruncated());
  }

  /**
   * Cap 3, SERVER routes A 10, B 7, C 5, D 2, E 1 and the agent's OTHER * 3: A and B stay (the
   * N - 1 = 2 largest), C, D, E and the agent's OTHER * fold into OTHER * 11, whose histogram is the
   * sum of theirs; 28 transactions before and after. The 2 CLIENT routes are under the cap.
   */
  @Test
  void theCapFoldsTheSmallestRoutesIntoOtherWithTotalsPreserved() {
    MetricsAccumulator acc = new MetricsAccumulator();
    add(acc, record("SERVER",
        route("SERVER", "GET", "/a", 10, new int[] {10}, new long[] {10}),
        route("SERVER", "GET", "/b", 7, new int[] {20}, new long[] {7}),
        route("SERVER", "GET", "/c", 5, new int[] {30}, new long[] {5}),
        route("SERVER", "GET", "/d", 2, new int[] {40, 41}, new long[] {1, 1}),
        route("SERVER", "GET", "/e", 1, new int[] {30}, new long[] {1}),
        route("SERVER", "OTHER", "*", 3, new int[] {10, 50}, new long[] {2, 1})));
    add(acc, record("CLIENT", route("CLIENT", "GET", "/x", 1, new int[] {1}, new long[] {1}),
        route("CLIENT", "PUT", "/y", 1, new int[] {2}, new long[] {1})));
    MetricsRow r = EntityWindowFunction.row(acc, W, 0, 3);
    assertEquals(List.of("CLIENT GET /x", "CLIENT PUT /y", "SERVER OTHER *", "SERVER GET /a", "SERVER GET /b"), keys(r));
    HttpRoute other = r.httpRoutes[2].route;
    assertEquals(11, other.transactions);
    assertArrayEquals(new int[] {10, 30, 40, 41, 50}, other.latency.buckets);
    assertArrayEquals(new long[] {2, 6, 1, 1, 1}, other.latency.counts);
    // OTHER *: 11 values; p50 = rank 6 -> 30 ns, p90 = rank 10 -> 41 ns, p99 = rank 11 -> 50 ns.
    assertEquals(30L, r.httpRoutes[2].latency.p50Ns);
    assertEquals(41L, r.httpRoutes[2].latency.p90Ns);
    assertEquals(50L, r.httpRoutes[2].latency.p99Ns);
    long server = Arrays.stream(r.httpRoutes).filter(h -> h.route.role.equals("SERVER"))
        .mapToLong(h -> h.route.transactions).sum();
    assertEquals(28, server);
    // The state keeps every route: a later, bigger cap (or more transactions) could choose others.
    assertEquals(8, acc.httpRoutes.routes.length);
    assertEquals(6, EntityWindowFunction.row(acc, W, 0, 6).httpRoutes.length - 2, "6 SERVER routes fit in 6");

    // Equal transactions: the cap keeps by identity (method, then path) so results are reproducible.
    MetricsAccumulator tie = new MetricsAccumulator();
    add(tie, record("SERVER", route("SERVER", "GET", "/b", 2, new int[] {1}, new long[] {2}),
        route("SERVER", "GET", "/a", 2, new int[] {1}, new long[] {2}),
        route("SERVER", "DELETE", "/c", 2, new int[] {1}, new long[] {2})));
    assertEquals(List.of("SERVER OTHER *", "SERVER DELETE /c"), keys(EntityWindowFunction.row(tie, W, 0, 2)));
  }

  @Test
  void aRecordWithoutRoutesChangesNoRoute() {
    MetricsAccumulator acc = new MetricsAccumulator();
    add(acc, record("SERVER", route("SERVER", "GET", USERS, 2, new int[] {100}, new long[] {2})));
    MetricsRow before = EntityWindowFunction.row(acc, W, 0);
    long servedBefore = before.tx.serverTransactions; // before.tx is the live state
    add(acc, record("SERVER"));
    MetricsRow after = EntityWindowFunction.row(acc, W, 1);
    assertEquals(keys(before), keys(after));
    assertEquals(2, after.httpRoutes[0].route.transactions);
    assertArrayEquals(new long[] {2}, after.httpRoutes[0].route.latency.counts);
    assertEquals(servedBefore + 5, after.tx.serverTransactions, "the record's totals count");

    // A window whose records had no route at all: none in Avro, none on the node.
    MetricsAccumulator plain = new MetricsAccumulator();
    add(plain, record("CLIENT"));
    MetricsRow p = EntityWindowFunction.row(plain, W, 0);
    assertEquals(0, p.httpRoutes.length);
    assertEquals(List.of(), WindowMetricsSerializer.toAvro(p).getHttpRoutes());
    Map<String, Object> m = new HashMap<>();
    NodeMetricsGraphWriter.putHttpRoutes(m, p.httpRoutes);
    assertTrue(m.containsKey("httpRouteKeys"));
    assertNull(m.get("httpRouteKeys"), "null removes the properties of an older window");
    assertNull(m.get("httpRouteP99Ns"));
  }

  /**
   * PROCESS -> GROUP -> POD -> HOST through the production operators ({@link ProcessGroups}, then
   * {@link CorrelationJob#entityWindows} with a cap of 2): P1 (container c, pod pod-x) serves
   * GET /users/{id} 3 x 100 ns + 1 x 1 ms and POST /orders 2 x 1000 ns in two records; P2 (no
   * ResourceSample: PROCESS and HOST only) GET /users/{id} 3 x 100 ns and GET /health 6 x 50 ns.
   * Host: users 7, health 6, orders 2: users stays, OTHER * = health + orders = 8 (6 x 50 ns,
   * 2 x 1000 ns). Then a late P1 record revises all of P1's levels.
   */
  @Test
  void routesRollUpFromProcessToHostAndALateRecordRevisesThem() throws Exception {
    var groups = new KeyedTwoInputStreamOperatorTestHarness<String, MetricInput, Transaction, MetricInput>(
        new KeyedCoProcessOperator<>(new ProcessGroups(3_600_000, 10_000, 30_000)), new ProcessGroups.ByEntity(),
        new ProcessGroups.ByProcess(), Types.STRING);
    groups.open();
    JobConfig c = new JobConfig();
    c.windowMs = 10_000;
    c.allowedLatenessMs = 5_000;
    c.maxHttpRoutes = 2;
    var windows = windowsHarness(c);
    try {
      groups.processElement1(new StreamRecord<>(TransactionJoinsTest.processSample("c", "pod-x"), 1000));
      Transaction p1a = onProcess(TransactionJoinsTest.server(1000),
          route("SERVER", "GET", USERS, 3, new int[] {100}, new long[] {3}),
          route("SERVER", "POST", "/orders", 2, new int[] {B1000}, new long[] {2}));
      Transaction p1b = onProcess(TransactionJoinsTest.server(2000),
          route("SERVER", "GET", USERS, 1, new int[] {B1MS}, new long[] {1}));
      Transaction p2 = onProcess(TransactionJoinsTest.server(3000),
          route("SERVER", "GET", USERS, 3, new int[] {100}, new long[] {3}),
          route("SERVER", "GET", "/health", 6, new int[] {50}, new long[] {6}));
      p2.tgid = 300;
      p2.processStartTimeNs = 7000;
      for (Transaction t : List.of(p1a, p1b, p2)) {
        groups.processElement2(new StreamRecord<>(t, t.eventTimeMs()));
      }
      groups.processWatermark1(new Watermark(9999));
      groups.processWatermark2(new Watermark(9999));
      forward(groups, windows);
      windows.processWatermark(new Watermark(9999));

      Map<String, MetricsRow> r0 = byKey(windows, 0);
      String p1 = "PROCESS|host-b|" + TransactionJoinsTest.P;
      assertEquals(List.of(p1, "GROUP|host-b|c", "POD|host-b|pod-x", "PROCESS|host-b|host-b/300/7000",
          "HOST|host-b|host-b").stream().sorted().toList(), r0.keySet().stream().sorted().toList());
      for (String k : List.of(p1, "GROUP|host-b|c", "POD|host-b|pod-x")) {
        assertEquals(List.of("SERVER GET " + USERS, "SERVER POST /orders"), keys(r0.get(k)), k);
        assertEquals(4, r0.get(k).httpRoutes[0].route.transactions, k);
        assertArrayEquals(new long[] {3, 1}, r0.get(k).httpRoutes[0].route.latency.counts, k);
      }
      assertEquals(List.of("SERVER GET /health", "SERVER GET " + USERS), keys(r0.get("PROCESS|host-b|host-b/300/7000")));
      MetricsRow host = r0.get("HOST|host-b|host-b");
      assertEquals(List.of("SERVER OTHER *", "SERVER GET " + USERS), keys(host));
      assertEquals(8, host.httpRoutes[0].route.transactions);
      assertArrayEquals(new int[] {50, B1000}, host.httpRoutes[0].route.latency.buckets);
      assertArrayEquals(new long[] {6, 2}, host.httpRoutes[0].route.latency.counts);
      // OTHER *: p50 rank 4 -> 50 ns; p90 rank ceil(7.2) = 8 -> 1000 ns bucket, midpoint 1001.
      assertEquals(50L, host.httpRoutes[0].latency.p50Ns);
      assertEquals(1001L, host.httpRoutes[0].latency.p90Ns);
      // Users on the host: 6 x 100 ns + 1 x 1 ms: p50 rank 4 -> 100; p90 rank ceil(6.3) = 7 -> 1 ms.
      assertEquals(7, host.httpRoutes[1].route.transactions);
      assertArrayEquals(new long[] {6, 1}, host.httpRoutes[1].route.latency.counts);
      assertEquals(100L, host.httpRoutes[1].latency.p50Ns);
      assertEquals(1_001_471L, host.httpRoutes[1].latency.p90Ns);
      assertEquals(0.7, host.httpRoutes[1].requestRate, 1e-12);

      // Late (watermark 9999, window end 10 s + 5 s lateness): P1 GET /users/{id} 1 x 100 ns more.
      Transaction late = onProcess(TransactionJoinsTest.server(5000),
          route("SERVER", "GET", USERS, 1, new int[] {100}, new long[] {1}));
      groups.processElement2(new StreamRecord<>(late, late.eventTimeMs()));
      forward(groups, windows);
      Map<String, MetricsRow> r1 = byKey(windows, 1);
      assertEquals(List.of(p1, "GROUP|host-b|c", "POD|host-b|pod-x", "HOST|host-b|host-b").stream().sorted().toList(),
          r1.keySet().stream().sorted().toList());
      for (String k : List.of(p1, "GROUP|host-b|c", "POD|host-b|pod-x")) {
        assertEquals(5, r1.get(k).httpRoutes[0].route.transactions, k);
        assertArrayEquals(new long[] {4, 1}, r1.get(k).httpRoutes[0].route.latency.counts, k);
      }
      // Host: users 8 now ties with OTHER * 8 (unchanged): ties go by identity, GET before OTHER.
      MetricsRow host1 = r1.get("HOST|host-b|host-b");
      assertEquals(List.of("SERVER GET " + USERS, "SERVER OTHER *"), keys(host1));
      assertEquals(8, host1.httpRoutes[0].route.transactions);
      assertArrayEquals(new long[] {7, 1}, host1.httpRoutes[0].route.latency.counts);
      assertEquals(8, host1.httpRoutes[1].route.transactions);
    } finally {
      groups.close();
      windows.close();
    }
  }

  @Test
  void theDeserializerTakesTheRoutesAndNamesBrokenOnes() {
    TransactionStats s = TransactionMathTest.stats();
    s.setHttpRoutes(List.of(avroRoute("GET", USERS, 2, List.of(3, 9), List.of(1L, 1L))));
    assertNull(TransactionStatsDeserializer.invalidReason(s));
    Transaction t = TransactionStatsDeserializer.toTransaction(s);
    assertEquals(1, t.httpRoutes.length);
    assertEquals("SERVER GET " + USERS, t.httpRoutes[0].key(), "the record's role");
    assertArrayEquals(new int[] {3, 9}, t.httpRoutes[0].latency.buckets);
    assertEquals(0, TransactionStatsDeserializer.toTransaction(TransactionMathTest.stats()).httpRoutes.length);

    s.setHttpRoutes(List.of(avroRoute("GET", "/", 1, List.of(3), List.of(1L)),
        avroRoute("GET", "/x", 1, List.of(9, 3), List.of(1L, 1L))));
    assertEquals("invalid: httpRoutes[1].latency buckets not strictly ascending and non-negative at index 1",
        TransactionStatsDeserializer.invalidReason(s));
    s.setHttpRoutes(List.of(avroRoute("GET", "/", 1, List.of(), List.of())));
    assertEquals("invalid: httpRoutes[0] has an empty latency histogram", TransactionStatsDeserializer.invalidReason(s));
    s.setHttpRoutes(List.of(avroRoute("GET", "/", 0, List.of(3), List.of(1L))));
    assertEquals("invalid: httpRoutes[0] transactions 0 (at least 1)", TransactionStatsDeserializer.invalidReason(s));
    s.setHttpRoutes(List.of(avroRoute("GET", "/", 1, List.of(3), List.of(0L))));
    assertEquals("invalid: httpRoutes[0].latency count 0 at index 0", TransactionStatsDeserializer.invalidReason(s));
  }

  /**
   * Kryo fallback would be slow and make state evolution impossible (as ConnectionEventDeserializerTest).
   * MetricInput and Transaction, which carry routes between tasks, have serializers of their own
   * (RecordSerializersTest); in state a Transaction is the POJO {@link Transaction#STATE_TYPE}.
   */
  @Test
  void routeTypesInStreamsAndStateArePojos() {
    List<TypeInformation<?>> types = new java.util.ArrayList<>();
    for (Class<?> c : List.of(HttpRoute.class, HttpRouteTotals.class, HttpRouteRow.class, MetricsAccumulator.class,
        MetricsRow.class)) {
      types.add(TypeInformation.of(c));
    }
    types.add(Transaction.STATE_TYPE);
    for (TypeInformation<?> info : types) {
      Class<?> c = info.getTypeClass();
      assertInstanceOf(PojoTypeInfo.class, info, c.getName());
      PojoTypeInfo<?> pojo = (PojoTypeInfo<?>) info;
      for (int i = 0; i < pojo.getArity(); i++) {
        assertTrue(!(pojo.getTypeAt(i) instanceof GenericTypeInfo), c.getName() + " field " + pojo.getPojoFieldAt(i));
      }
    }
  }

  static HttpRouteStats avroRoute(String method, String path, long n, List<Integer> buckets, List<Long> counts) {
    return HttpRouteStats.newBuilder().setMethod(method).setPath(path).setPathTruncated(false).setTransactions(n)
        .setLatencyBuckets(buckets).setLatencyCounts(counts).build();
  }

  static HttpRoute route(String role, String method, String path, long n, int[] buckets, long[] counts) {
    return HttpRoute.of(role, method, path, false, n, buckets, counts);
  }

  /** A record of process h/1/2 with 5 transactions (its own histogram: 5 x 1 ns) and these routes. */
  static Transaction record(String role, HttpRoute... routes) {
    Transaction t = TransactionMathTest.tx(role, 5, new int[] {1}, new long[] {5});
    t.httpRoutes = routes;
    return t;
  }

  static Transaction onProcess(Transaction t, HttpRoute... routes) {
    t.httpRoutes = routes;
    return t;
  }

  static void add(MetricsAccumulator acc, Transaction t) {
    acc.add(MetricInput.ofTransaction(t, MetricInput.PROCESS, "h/1/2", "host", null));
  }

  static List<String> keys(MetricsRow r) {
    return Arrays.stream(r.httpRoutes).map(h -> h.route.key()).toList();
  }

  static KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> windowsHarness(JobConfig c)
      throws Exception {
    return WindowHarness.open(CorrelationJob::entityWindows, MetricInput.class, new EntityWindowAggregate.ByWindowKey(), c);
  }

  /** Moves ProcessGroups' output records (with their timestamps) into the windows. */
  static void forward(KeyedTwoInputStreamOperatorTestHarness<String, MetricInput, Transaction, MetricInput> from,
      KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> to) throws Exception {
    List<StreamRecord<MetricInput>> records = TransactionJoinsTest.records(from.getOutput());
    from.getOutput().clear();
    for (StreamRecord<MetricInput> r : records) {
      to.processElement(new StreamRecord<>(r.getValue(), r.getTimestamp()));
    }
  }

  /** The window results of one revision, by window key. */
  static Map<String, MetricsRow> byKey(KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> h,
      int revision) {
    Map<String, MetricsRow> m = new HashMap<>();
    List<MetricsRow> rows = new ArrayList<>();
    for (Object o : h.extractOutputValues()) {
      rows.add((MetricsRow) o);
    }
    for (MetricsRow r : rows) {
      if (r.revision == revision) {
        m.put(r.key(), r);
      }
    }
    return m;
  }
}
