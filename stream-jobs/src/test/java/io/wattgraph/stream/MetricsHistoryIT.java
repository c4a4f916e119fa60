package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.localstack.Neo4jServer;
import io.wattgraph.stream.sink.neo4j.EdgeMetricsGraphWriter;
import io.wattgraph.stream.sink.neo4j.Neo4jSettings;
import io.wattgraph.stream.sink.neo4j.Neo4jSinkWriter;
import io.wattgraph.stream.sink.neo4j.NodeMetricsGraphWriter;
import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.transaction.EdgeMetricsRow;
import io.wattgraph.stream.window.LatencyStats;
import io.wattgraph.stream.window.MetricsRow;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.streaming.runtime.tasks.StreamTaskActionExecutor;
import org.apache.flink.streaming.runtime.tasks.TestProcessingTimeService;
import org.apache.flink.streaming.runtime.tasks.mailbox.MailboxExecutorImpl;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;
import org.neo4j.driver.Value;

/**
 * The bounded per-node history of {@link NodeMetricsGraphWriter} against local-stack's real Neo4j:
 * windows out of order and several in one batch, the bound, revisions replacing their entry, older
 * revisions ignored, replays and other batchings giving the same graph, every node label.
 */
class MetricsHistoryIT {
  static final long S = 1_000_000_000L;
  static final long T0 = 1_700_000_000_000_000_000L;
  static final String C1 = "c1".repeat(32);
  static final String P1 = "h1/100/5000";
  static final String P2 = "h2/200/6000";

  static Neo4jServer neo4j;
  static Driver driver;
  static Neo4jSettings settings;

  @BeforeAll
  static void start() throws Exception {
    Path root = Paths.get("target", "it-data", "history-" + System.currentTimeMillis()).toAbsolutePath();
    Files.createDirectories(root);
    neo4j = Neo4jServer.start(root.resolve("neo4j"), 0);
    driver = GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none());
    settings = new Neo4jSettings(neo4j.boltUri(), null, null, 100, 100);
  }

  @AfterAll
  static void stop() {
    if (driver != null) {
      driver.close();
    }
    if (neo4j != null) {
      neo4j.close();
    }
  }

  @BeforeEach
  void emptyGraph() {
    try (Session s = driver.session()) {
      s.executeWrite(tx -> tx.run("MATCH (n) DETACH DELETE n").consume());
    }
  }

  /** Window k ends at T0 + 10 s * k. */
  static long end(int k) {
    return T0 + 10 * S * k;
  }

  static MetricsRow row(String level, String entityId, int k, int revision, double cpu, double powerW) {
    MetricsRow r = new MetricsRow();
    r.level = level;
    r.hostId = "h1";
    r.entityId = entityId;
    r.windowStartNs = end(k) - 10 * S;
    r.windowEndNs = end(k);
    r.revision = revision;
    r.samples = 2;
    r.cpuCores = cpu;
    r.powerWatts = powerW;
    r.energyJoules = powerW * 10;
    r.powerSource = "MEASURED";
    return r;
  }

  static MetricsRow host(int k, int revision, double cpu) {
    return row("HOST", "h1", k, revision, cpu, 10 * cpu);
  }

  /** The job's default: 5 min of lateness and a 5 s checkpoint interval in 10 s windows. */
  static final int SHARES = 32;

  static void write(int historyWindows, MetricsRow... rows) {
    try (NodeMetricsGraphWriter w = new NodeMetricsGraphWriter(settings, historyWindows, SHARES)) {
      w.write(List.of(rows));
    }
  }

  static Value node(String label, String id) {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> tx.run("MATCH (n:" + label + " {id: $id}) RETURN n", Map.of("id", id))
          .single().get(0));
    }
  }

  static List<Object> list(Value n, String property) {
    return n.get(property).isNull() ? null : n.get(property).asList();
  }

  static List<Object> ends(int... ks) {
    List<Object> l = new ArrayList<>();
    for (int k : ks) {
      l.add(end(k));
    }
    return l;
  }

  static List<String> dump() {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> {
        Stream<String> nodes = tx.run("MATCH (n) RETURN labels(n) AS l, properties(n) AS p").list().stream()
            .map(r -> "node " + r.get("l").asList() + " " + new TreeMap<>(r.get("p").asMap()));
        Stream<String> rels = tx.run("MATCH (a)-[r]->(b) RETURN a.id AS a, type(r) AS t, b.id AS b").list().stream()
            .map(r -> "rel " + r.get("a").asString() + " -" + r.get("t").asString() + "-> " + r.get("b").asString());
        return Stream.concat(nodes, rels).sorted(Comparator.naturalOrder()).toList();
      });
    }
  }

  @Test
  void windowsInAnyOrderAndSeveralPerBatchKeptSortedUpToTheBound() {
    write(3, host(2, 0, 0.2));
    Value h = node("Host", "h1");
    assertEquals(ends(2), list(h, "historyWindowEndNs"));
    assertEquals(List.of(0.2), list(h, "historyCpuUsage"));
    assertEquals(List.of(2.0), list(h, "historyPowerW"));

    // An older window: its entry goes in before w2; the latest-window properties stay w2's.
    write(3, host(1, 0, 0.1));
    h = node("Host", "h1");
    assertEquals(ends(1, 2), list(h, "historyWindowEndNs"));
    assertEquals(List.of(0.1, 0.2), list(h, "historyCpuUsage"));
    assertEquals(0.2, h.get("cpuUsage").asDouble());
    assertEquals(end(2), h.get("metricsWindowEndNs").asLong());

    // Two windows of one node in one batch: both entries; the bound keeps the newest 3.
    write(3, host(4, 0, 0.4), host(3, 0, 0.3));
    h = node("Host", "h1");
    assertEquals(ends(2, 3, 4), list(h, "historyWindowEndNs"));
    assertEquals(List.of(0.2, 0.3, 0.4), list(h, "historyCpuUsage"));
    assertEquals(List.of(2.0, 3.0, 4.0), list(h, "historyPowerW"));
    assertEquals(List.of(0L, 0L, 0L), list(h, "historyRevision"));
    assertEquals(0.4, h.get("cpuUsage").asDouble());

    // A window older than the whole full history is not kept (and changes nothing else).
    List<String> before = dump();
    write(3, host(1, 5, 9.9));
    assertEquals(before, dump());

    // A smaller bound (the job restarted with a lower --history-windows) trims at the next write.
    write(2, host(5, 0, 0.5));
    assertEquals(ends(4, 5), list(node("Host", "h1"), "historyWindowEndNs"));
  }

  @Test
  void aRevisionReplacesItsEntryAnOlderOneDoesNot() {
    write(10, host(1, 0, 0.1), host(2, 0, 0.2), host(3, 0, 0.3));
    // A late sample re-fired w2 after w3 was written: its entry is corrected, the latest stays w3.
    write(10, host(2, 1, 0.25));
    Value h = node("Host", "h1");
    assertEquals(ends(1, 2, 3), list(h, "historyWindowEndNs"));
    assertEquals(List.of(0.1, 0.25, 0.3), list(h, "historyCpuUsage"));
    assertEquals(List.of(0L, 1L, 0L), list(h, "historyRevision"));
    assertEquals(0.3, h.get("cpuUsage").asDouble());
    assertEquals(0, h.get("metricsRevision").asInt());

    List<String> before = dump();
    // Revision 0 of w2 again (a stale batch): ignored. Revision 1 again (a replay): the same graph.
    write(10, host(2, 0, 0.2));
    assertEquals(before, dump());
    write(10, host(2, 1, 0.25));
    assertEquals(before, dump());
  }

  @Test
  void replaysAndOtherBatchingsGiveTheSameGraph() {
    MetricsRow[] rows = {host(1, 0, 0.1), host(3, 0, 0.3), host(2, 0, 0.2), host(2, 1, 0.22),
        row("GROUP", C1, 1, 0, 0.05, 0.5), row("GROUP", C1, 2, 0, 0.06, 0.6), host(4, 0, 0.4)};
    // Live: one row per batch, in arrival order.
    for (MetricsRow r : rows) {
      write(3, r);
    }
    List<String> live = dump();
    // A restart from an older checkpoint replays everything: nothing changes.
    for (MetricsRow r : rows) {
      write(3, r);
    }
    assertEquals(live, dump());

    // A catch-up run writes the same rows in one batch (one row per window, its latest revision).
    emptyGraph();
    write(3, rows[0], rows[1], rows[3], rows[4], rows[5], rows[6]);
    assertEquals(live, dump());
    Value h = node("Host", "h1");
    assertEquals(ends(2, 3, 4), list(h, "historyWindowEndNs"));
    assertEquals(List.of(0.22, 0.3, 0.4), list(h, "historyCpuUsage"));
  }

  @Test
  void everyLabelKeepsHistoryAndUnknownValuesAreNaN() {
    try (Session s = driver.session()) {
      s.executeWrite(tx -> tx.run("MERGE (p:Process {id: $p}) SET p.hostId = 'h1'", Map.of("p", P1)).consume());
    }
    MetricsRow txOnly = row("PROCESS", P1, 2, 0, 0, 0);
    // A window with TransactionStats but no ResourceSample: no CPU or power, a request rate.
    txOnly.samples = 0;
    txOnly.tx = new TransactionTotals();
    txOnly.tx.serverTransactions = 50;
    txOnly.serverTime = new LatencyStats();
    txOnly.clientRtt = new LatencyStats();
    MetricsRow ns1 = row("NAMESPACE", "shop", 1, 0, 0.7, 7);
    MetricsRow ns2 = row("NAMESPACE", "shop", 2, 0, 0.8, 8);
    write(5, row("PROCESS", P1, 1, 0, 0.3, 3), txOnly, row("GROUP", C1, 1, 0, 0.5, 5), row("GROUP", C1, 2, 0, 0.6, 6),
        ns1, ns2, row("PROCESS", "h1/999/1", 1, 0, 1, 1));

    Value p = node("Process", P1);
    assertEquals(ends(1, 2), list(p, "historyWindowEndNs"));
    assertEquals(0.3, (Double) list(p, "historyCpuUsage").get(0));
    assertTrue(Double.isNaN((Double) list(p, "historyCpuUsage").get(1)), list(p, "historyCpuUsage")::toString);
    assertTrue(Double.isNaN((Double) list(p, "historyPowerW").get(1)));
    assertTrue(Double.isNaN((Double) list(p, "historyRequestRate").get(0)), "no TransactionStats in w1");
    assertEquals(5.0, (Double) list(p, "historyRequestRate").get(1), "50 served in 10 s");
    assertEquals(List.of(0.5, 0.6), list(node("Container", C1), "historyCpuUsage"));
    assertEquals(List.of(7.0, 8.0), list(node("Namespace", "shop"), "historyPowerW"));
    try (Session s = driver.session()) {
      assertEquals(0L, (long) s.executeRead(tx -> tx.run("MATCH (p:Process {id: 'h1/999/1'}) RETURN count(p)")
          .single().get(0).asLong()), "a process without node still gets none");
    }
  }

  /** A container window serving {@code n} requests, all in octave bucket {@code octave}, of {@code sumNs} in all. */
  static MetricsRow served(int k, int revision, int octave, long n, double sumNs) {
    MetricsRow r = row("GROUP", C1, k, revision, 0.1, 1);
    r.serverTime = new LatencyStats();
    r.serverTime.octaves = new long[io.wattgraph.schema.TransactionHistograms.OCTAVE_BUCKETS];
    r.serverTime.octaves[octave] = n;
    r.serverTime.sumNs = sumNs;
    return r;
  }

  static List<Long> totals(int... octaveCounts) {
    List<Long> l = new ArrayList<>();
    for (int i = 0; i < io.wattgraph.schema.TransactionHistograms.OCTAVE_BUCKETS; i++) {
      l.add(i < octaveCounts.length ? (long) octaveCounts[i] : 0L);
    }
    return l;
  }

  /**
   * The latency totals the export reads count every window once, whatever the batching and with or without
   * history: a revision replaces its window's share, a replay adds nothing, and a window without
   * transactions adds nothing.
   */
  @Test
  void latencyTotalsCountEveryWindowOnce() {
    for (int history : new int[] {0, 3}) {
      emptyGraph();
      // w1 (3 in bucket 1), w2 revision 0 (2 in bucket 2) then its revision 1 (5), w3 without transactions,
      // w4 (1 in bucket 0): 3 + 5 + 1.
      write(history, served(1, 0, 1, 3, 30));
      write(history, served(2, 0, 2, 2, 200));
      write(history, served(2, 1, 2, 5, 500));
      write(history, row("GROUP", C1, 3, 0, 0.1, 1));
      write(history, served(4, 0, 0, 1, 7));
      Value c = node("Container", C1);
      assertEquals(totals(1, 3, 5), list(c, "serverTimeOctaveTotals"), "history " + history);
      assertEquals(537.0, c.get("serverTimeSumNsTotal").asDouble(), "history " + history);
      assertEquals(totals(1), list(c, "serverTimeOctaves"));
      assertTrue(c.get("clientRttOctaveTotals").isNull(), "no client round trips");
      List<String> live = dump();

      // A replay of everything, one batch or one row at a time: the same graph.
      write(history, served(1, 0, 1, 3, 30), served(2, 1, 2, 5, 500), row("GROUP", C1, 3, 0, 0.1, 1),
          served(4, 0, 0, 1, 7));
      assertEquals(live, dump(), "history " + history);
      // A catch-up run: every window in one batch, the same totals.
      emptyGraph();
      write(history, served(4, 0, 0, 1, 7), served(2, 1, 2, 5, 500), served(1, 0, 1, 3, 30),
          row("GROUP", C1, 3, 0, 0.1, 1));
      assertEquals(totals(1, 3, 5), list(node("Container", C1), "serverTimeOctaveTotals"), "history " + history);
    }
  }

  /**
   * The totals are the sum over the latest revision of every window, whatever order windows and revisions
   * arrive in: a late revision of w1 after w2 and w3 were written replaces w1's share, its older revision after
   * it changes nothing. Every order of four rows (two revisions of w1, w2, w3), one per batch, leaves the same
   * graph, on a node (with and without history) and on an edge.
   */
  @Test
  void latencyTotalsAreTheLatestRevisionOfEveryWindowInAnyOrder() {
    // w1: 3 then 5 in bucket 1; w2: 2 in bucket 2; w3: 1 in bucket 0. Latest revisions: 5 + 2 + 1.
    MetricsRow[] nodeRows = {served(1, 0, 1, 3, 30), served(1, 1, 1, 5, 50), served(2, 0, 2, 2, 200),
        served(3, 0, 0, 1, 7)};
    EdgeMetricsRow[] edgeRows = {edge(1, 0, 1, 3, 30), edge(1, 1, 1, 5, 50), edge(2, 0, 2, 2, 200),
        edge(3, 0, 0, 1, 7)};
    for (int history : new int[] {0, 2}) {
      List<String> first = null;
      try (NodeMetricsGraphWriter nodes = new NodeMetricsGraphWriter(settings, history, SHARES);
          EdgeMetricsGraphWriter edges = new EdgeMetricsGraphWriter(settings, SHARES)) {
        for (int[] order : permutations(nodeRows.length)) {
          emptyGraph();
          talksTo();
          for (int i : order) {
            nodes.write(List.of(nodeRows[i]));
            edges.write(List.of(edgeRows[i]));
          }
          String what = "history " + history + ", order " + Arrays.toString(order);
          Value c = node("Container", C1);
          assertEquals(totals(1, 5, 2), list(c, "serverTimeOctaveTotals"), what);
          assertEquals(257.0, c.get("serverTimeSumNsTotal").asDouble(), what);
          Value t = edgeValue();
          assertEquals(totals(1, 5, 2), list(t, "clientRttOctaveTotals"), what);
          assertEquals(257.0, t.get("clientRttSumNsTotal").asDouble(), what);
          assertEquals(totals(1, 5, 2), list(t, "serverTimeOctaveTotals"), what);
          List<String> graph = dump();
          if (first == null) {
            first = graph;
          }
          assertEquals(first, graph, what);
        }
        assertEquals(0, nodes.pastShares() + edges.pastShares(), "every window within the kept shares");
      }
    }
  }

  /**
   * Shares of the newest windows with a histogram are kept, up to the bound: a revision of a window older than all
   * of them is not added (its earlier share is not known) and is counted; one of a kept window still replaces it.
   */
  @Test
  void aRevisionPastTheKeptSharesIsCountedNotAdded() {
    try (NodeMetricsGraphWriter nodes = new NodeMetricsGraphWriter(settings, 5, 2);
        EdgeMetricsGraphWriter edges = new EdgeMetricsGraphWriter(settings, 2)) {
      talksTo();
      // w1 (3 in bucket 1), w2 (2 in bucket 2), w3 without transactions, w4 (1 in bucket 0): w2 and w4 kept.
      nodes.write(List.of(served(1, 0, 1, 3, 30), served(2, 0, 2, 2, 200), row("GROUP", C1, 3, 0, 0.1, 1),
          served(4, 0, 0, 1, 7)));
      edges.write(List.of(edge(1, 0, 1, 3, 30), edge(2, 0, 2, 2, 200), edge(4, 0, 0, 1, 7)));
      Value c = node("Container", C1);
      Value t = edgeValue();
      for (Value v : List.of(c, t)) {
        assertEquals(ends(2, 4), list(v, "latencyShareWindowEndNs"));
        assertEquals(List.of(0L, 0L), list(v, "latencyShareRevision"));
        assertEquals(2 * io.wattgraph.schema.TransactionHistograms.OCTAVE_BUCKETS, list(v, "serverTimeShareOctaves").size());
        assertEquals(List.of(200.0, 7.0), list(v, "serverTimeShareSumNs"));
        assertEquals(totals(1, 3, 2), list(v, "serverTimeOctaveTotals"));
      }
      assertEquals(List.of(0.0, 0.0), list(c, "clientRttShareSumNs"), "no client round trips: zeros");
      assertTrue(c.get("clientRttOctaveTotals").isNull(), "no client round trips: no totals");
      assertEquals(0, nodes.pastShares() + edges.pastShares());

      // w1 revision 1 (5): past the kept shares, counted, not added; w2 revision 1 (4) replaces w2's share;
      // w2 revision 0 again and w3's revision (no transactions) change nothing and are not counted.
      nodes.write(List.of(served(1, 1, 1, 5, 50)));
      nodes.write(List.of(served(2, 1, 2, 4, 400), row("GROUP", C1, 3, 1, 0.1, 1)));
      nodes.write(List.of(served(2, 0, 2, 2, 200)));
      edges.write(List.of(edge(1, 1, 1, 5, 50)));
      edges.write(List.of(edge(2, 1, 2, 4, 400)));
      edges.write(List.of(edge(2, 0, 2, 2, 200)));
      assertEquals(1, nodes.pastShares());
      assertEquals(1, edges.pastShares());
      c = node("Container", C1);
      t = edgeValue();
      for (Value v : List.of(c, t)) {
        assertEquals(totals(1, 3, 4), list(v, "serverTimeOctaveTotals"));
        assertEquals(437.0, v.get("serverTimeSumNsTotal").asDouble());
        assertEquals(List.of(1L, 0L), list(v, "latencyShareRevision"), "w2 revised, w4");
      }
      assertEquals(totals(1, 3, 4), list(t, "clientRttOctaveTotals"));
    }
  }

  static List<int[]> permutations(int n) {
    List<int[]> out = new ArrayList<>();
    permute(new int[n], new boolean[n], 0, out);
    return out;
  }

  private static void permute(int[] prefix, boolean[] used, int at, List<int[]> out) {
    if (at == prefix.length) {
      out.add(prefix.clone());
      return;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (!used[i]) {
        used[i] = true;
        prefix[at] = i;
        permute(prefix, used, at + 1, out);
        used[i] = false;
      }
    }
  }

  /** P1 -> P2 as the connection sink makes it. */
  static void talksTo() {
    try (Session s = driver.session()) {
      s.executeWrite(tx -> tx.run("MERGE (a:Process {id: $a}) MERGE (b:Process {id: $b}) MERGE (a)-[:TALKS_TO]->(b)",
          Map.of("a", P1, "b", P2)).consume());
    }
  }

  static Value edgeValue() {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> tx.run("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) RETURN t",
          Map.of("a", P1, "b", P2)).single().get(0));
    }
  }

  /** An edge window P1 -> P2 of {@code n} transactions, client round trips and server times all in {@code octave}. */
  static EdgeMetricsRow edge(int k, int revision, int octave, long n, double sumNs) {
    EdgeMetricsRow r = new EdgeMetricsRow();
    r.clientKind = EdgeInput.PROCESS;
    r.clientId = P1;
    r.serverKind = EdgeInput.PROCESS;
    r.serverId = P2;
    r.windowStartNs = end(k) - 10 * S;
    r.windowEndNs = end(k);
    r.revision = revision;
    r.requestRate = n / 10.0;
    r.clientRtt = served(k, revision, octave, n, sumNs).serverTime;
    r.serverTime = served(k, revision, octave, n, sumNs).serverTime;
    return r;
  }

  /** A sink writer of edge windows as the job runs it, with this thread as its task's mailbox thread. */
  static final class EdgeSink implements AutoCloseable {
    final TestProcessingTimeService timers = new TestProcessingTimeService();
    final MailboxExecutorImpl mailbox =
        new MailboxExecutorImpl(new TaskMailboxImpl(Thread.currentThread()), 0, StreamTaskActionExecutor.IMMEDIATE);
    final EdgeMetricsGraphWriter graph = new EdgeMetricsGraphWriter(settings, SHARES);
    final Neo4jSinkWriter<EdgeMetricsRow> writer =
        new Neo4jSinkWriter<>(settings, graph, timers, mailbox, new SimpleCounter(), List.of());

    /** Hands the rows to the writing thread now and waits until that write is done. */
    void writeNow(EdgeMetricsRow... rows) throws Exception {
      for (EdgeMetricsRow r : rows) {
        writer.write(r);
      }
      writer.flush(false);
      mailbox.yield(); // the write's completion
    }

    @Override
    public void close() throws Exception {
      writer.close();
    }
  }

  /**
   * Issue 23: an edge window that reaches the graph before the connection path made its edge waits in the sink
   * writer and is written once the edge is there, so the edge's totals count its requests.
   */
  @Test
  void anEdgeWindowBeforeItsEdgeWaitsForIt() throws Exception {
    try (EdgeSink sink = new EdgeSink()) {
      sink.writeNow(edge(1, 0, 1, 3, 30));
      talksTo();
      sink.writeNow(edge(2, 0, 2, 2, 200));
      sink.writer.flush(true);
    }
    Value t = edgeValue();
    assertEquals(totals(0, 3, 2), list(t, "clientRttOctaveTotals"), "both windows, the first written after its edge");
    assertEquals(230.0, t.get("serverTimeSumNsTotal").asDouble());
  }

  /**
   * An edge window whose edge never comes waits in the checkpoint, is offered again for the wait
   * ({@code --edge-wait-ms}), then is dropped and counted ({@code edgeWindowsWithoutEdge}); nothing else of the
   * batch is lost and no edge is made. A window retracted to nothing (all requests moved off an External edge the
   * connection path deleted) has nothing to add: it is dropped at once and not counted.
   */
  @Test
  void anEdgeWindowWhoseEdgeNeverComesIsCountedAfterTheWait() throws Exception {
    talksTo();
    EdgeMetricsRow lost = edge(1, 0, 1, 3, 30);
    lost.serverId = "h3/300/7000";
    EdgeMetricsRow retracted = edge(1, 1, 1, 0, 0);
    retracted.serverKind = EdgeInput.EXTERNAL;
    retracted.serverId = "203.0.113.7:443";
    long before = EdgeMetricsGraphWriter.WITHOUT_EDGE.get();
    try (EdgeSink sink = new EdgeSink()) {
      sink.writeNow(edge(1, 0, 1, 3, 30), lost, retracted);
      assertEquals(List.of(lost), sink.writer.snapshotState(1), "the window waiting for its edge is in the checkpoint");
      sink.timers.advance(settings.waitMs - 1);
      sink.mailbox.yield(); // offered again by the timer, within the wait
      assertEquals(List.of(lost), sink.writer.snapshotState(2));
      assertEquals(0, sink.graph.withoutEdge());
      sink.timers.advance(settings.waitMs);
      sink.mailbox.yield();
      assertEquals(List.of(), sink.writer.snapshotState(3));
      assertEquals(1, sink.graph.withoutEdge(), "the lost window, not the retracted one");
      sink.writer.flush(true);
    }
    assertEquals(1, EdgeMetricsGraphWriter.WITHOUT_EDGE.get() - before);
    assertEquals(totals(0, 3), list(edgeValue(), "clientRttOctaveTotals"));
    try (Session s = driver.session()) {
      assertEquals(List.of(2L, 1L), s.executeRead(tx -> tx.run(
          "MATCH (n) OPTIONAL MATCH (n)-[t]->() RETURN count(DISTINCT n) AS n, count(t) AS t").single().values()
          .stream().map(Value::asLong).toList()), "no node or edge made: P1, P2 and their edge");
    }
  }

  @Test
  void zeroKeepsTheLatestWindowOnly() {
    write(0, host(1, 0, 0.1), host(2, 0, 0.2));
    Value h = node("Host", "h1");
    assertTrue(h.get("historyWindowEndNs").isNull(), h.asMap()::toString);
    assertEquals(0.2, h.get("cpuUsage").asDouble());
  }
}
