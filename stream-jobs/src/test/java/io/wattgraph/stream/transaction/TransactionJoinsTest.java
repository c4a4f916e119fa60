package io.wattgraph.stream.transaction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.PodMetadata;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.source.Sample;
import io.wattgraph.stream.window.MetricInput;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * {@link ProcessGroups} and {@link TransactionEdges} in Flink's harness, watermarks by hand, window
 * 10 s: a record waits for its mapping or peer until the watermark reaches its window's last ms
 * (9999 for a record at 1000), then goes on stamped with that ms (still in its window); known
 * records, and records whose window has fired, go on at once.
 */
public class TransactionJoinsTest {
  public static final String P = "host-b/200/6000";

  @Test
  void aTransactionWaitsForItsProcessGroupUntilTheWatermarkPassesIt() throws Exception {
    var h = new KeyedTwoInputStreamOperatorTestHarness<String, MetricInput, Transaction, MetricInput>(
        new KeyedCoProcessOperator<>(new ProcessGroups(3_600_000, 10_000, 30_000)), new ProcessGroups.ByEntity(),
        new ProcessGroups.ByProcess(), Types.STRING);
    h.open();
    // A transaction at 1000 ms before the process's sample: held back.
    h.processElement2(new StreamRecord<>(server(1000), 1000));
    assertEquals(0, records(h.getOutput()).size());
    // The watermark passing the record's own time (disorder within the window) does not release it.
    h.processWatermark1(new Watermark(5000));
    h.processWatermark2(new Watermark(5000));
    assertEquals(0, records(h.getOutput()).size());
    // The sample (group C, pod X, as disordered as that) arrives, then the watermark reaches 9999:
    // released with timestamp 9999, in the window [0, 10000).
    h.processElement1(new StreamRecord<>(processSample("c", "pod-x"), 1000));
    h.processWatermark1(new Watermark(9999));
    h.processWatermark2(new Watermark(9999));
    List<StreamRecord<MetricInput>> out = records(h.getOutput());
    assertEquals(List.of("PROCESS|host-b|" + P, "GROUP|host-b|c", "POD|host-b|pod-x", "HOST|host-b|host-b"),
        out.stream().map(r -> r.getValue().key()).toList());
    assertTrue(out.stream().allMatch(r -> r.getTimestamp() == 9999));
    assertEquals("c", out.get(0).getValue().groupId);
    h.getOutput().clear();
    // Known now: the next goes on at once.
    h.processElement2(new StreamRecord<>(server(1500), 1500));
    assertEquals(4, records(h.getOutput()).size());
    h.close();

    // A process that never reports a sample: PROCESS and HOST only, once the watermark passes.
    var h2 = new KeyedTwoInputStreamOperatorTestHarness<String, MetricInput, Transaction, MetricInput>(
        new KeyedCoProcessOperator<>(new ProcessGroups(3_600_000, 10_000, 30_000)), new ProcessGroups.ByEntity(),
        new ProcessGroups.ByProcess(), Types.STRING);
    h2.open();
    h2.processElement2(new StreamRecord<>(server(1000), 1000));
    h2.processWatermark1(new Watermark(9998));
    h2.processWatermark2(new Watermark(9998));
    assertEquals(0, records(h2.getOutput()).size(), "not before the watermark reaches the window's end");
    h2.processWatermark1(new Watermark(12_000));
    h2.processWatermark2(new Watermark(12_000));
    assertEquals(List.of("PROCESS|host-b|" + P, "HOST|host-b|host-b"),
        TransactionJoinsTest.<MetricInput>records(h2.getOutput()).stream().map(r -> r.getValue().key()).toList());
    h2.getOutput().clear();
    // A late record (behind the watermark) goes on at once, with its own timestamp.
    h2.processElement2(new StreamRecord<>(server(500), 500));
    List<StreamRecord<MetricInput>> late = records(h2.getOutput());
    assertEquals(2, late.size());
    assertEquals(500, late.get(0).getTimestamp());
    h2.close();
  }

  @Test
  void bothEndsMakeTheProcessEdgeAndALoneEndAnExternalOne() throws Exception {
    var h = new KeyedOneInputStreamOperatorTestHarness<String, Transaction, EdgeInput>(
        new KeyedProcessOperator<>(new TransactionEdges(3_600_000, 10_000, 30_000)), new TransactionEdges.ByConnection(),
        Types.STRING);
    h.open();
    h.processElement(new StreamRecord<>(server(1000), 1000));
    assertEquals(0, records(h.getOutput()).size(), "waits for the client end");
    // The client end's record of the same window comes after the watermark passed the server's
    // record's own time (disorder within the window): still paired.
    h.processWatermark(new Watermark(5000));
    assertEquals(0, records(h.getOutput()).size());
    h.processElement(new StreamRecord<>(client(1000), 1000));
    List<StreamRecord<EdgeInput>> out = records(h.getOutput());
    assertEquals(1, out.size(), "the client's record goes on at once: its peer is known");
    assertEquals(1000, out.get(0).getTimestamp());
    h.processWatermark(new Watermark(9999));
    out = records(h.getOutput());
    assertEquals(2, out.size());
    for (StreamRecord<EdgeInput> r : out) {
      assertEquals("P:host-a/100/5000>P:" + P, r.getValue().key());
    }
    assertEquals(9999, out.get(1).getTimestamp(), "the server's record, released at its window's end");
    h.close();

    try (EdgePairing lone = new EdgePairing(3_600_000, 10_000)) {
      lone.element(client(1000), 1000);
      lone.watermark(9999);
      assertEquals(List.of("P:host-a/100/5000>E:10.0.0.2:8080"), lone.takeKeys(), "External server ip:port");
    }
    try (EdgePairing loneServer = new EdgePairing(3_600_000, 10_000)) {
      loneServer.element(server(1000), 1000);
      loneServer.watermark(9999);
      assertEquals(List.of("E:10.0.0.1>P:" + P), loneServer.takeKeys(), "External client ip");
    }
  }

  /**
   * The order of arrivals of a loaded CI run (a TaskManager and JobManager kill test): host-a merged a short connection
   * into its client-port-0 record, host-b's agent saw it outlive an interval and reported it on its own
   * (real client port). No CLIENT record ever names that port; the server's record still counts for the
   * edge host-a's process -> host-b's, not for an External client, whichever step sees what first.
   */
  @Test
  void anEndReportedOnItsOwnPairsWithThePeerMergedIntoItsClientPortZeroRecord() throws Exception {
    String edge = "P:host-a/100/5000>P:" + P;
    Transaction mergedClient = tx("CLIENT", "host-a", "10.0.0.1", 0, "10.0.0.2", 8080, 100, 5000, 1000);
    Transaction mergedServer = tx("SERVER", "host-b", "10.0.0.2", 8080, "10.0.0.1", 0, 200, 6000, 1000);
    for (boolean serverFirst : new boolean[] {true, false}) {
      try (EdgePairing h = new EdgePairing(3_600_000, 10_000)) {
        if (serverFirst) {
          h.element(server(1000), 1000);
        }
        h.element(mergedClient, 1000);
        h.element(mergedServer, 1000);
        if (!serverFirst) {
          h.element(server(1000), 1000);
        }
        assertEquals(List.of(edge), h.takeKeys(), "the merged server record pairs with the merged client's at once");
        h.watermark(9999);
        // The merged client's record (its peer known now) and the server's own: both on the edge, in their window.
        List<StreamRecord<EdgeInput>> out = h.take();
        assertEquals(List.of(edge, edge), out.stream().map(r -> r.getValue().key()).toList(), "serverFirst=" + serverFirst);
        assertTrue(out.stream().allMatch(r -> r.getTimestamp() == 9999), "in their window");
        assertTrue(out.stream().anyMatch(r -> r.getValue().transaction.localPort == 8080 && r.getValue().transaction.remotePort == 40000));
      }
    }
    // Its peer's process learnt after the record was unpaired (another subtask's note still on its way):
    // the record waits for the watermark, so it pairs as well.
    try (EdgePairing h = new EdgePairing(3_600_000, 10_000)) {
      h.element(server(1000), 1000);
      h.edges.processWatermark(new org.apache.flink.streaming.api.watermark.Watermark(9999));
      var notes = new java.util.ArrayList<>(h.edges.getSideOutput(TransactionEdges.UNPAIRED));
      h.edges.getSideOutput(TransactionEdges.UNPAIRED).clear();
      for (var n : notes) {
        h.masked.processElement(n);
      }
      h.masked.processElement(new StreamRecord<>(PeerNote.process(mergedClient), 1000));
      h.masked.processWatermark(new org.apache.flink.streaming.api.watermark.Watermark(9999));
      assertEquals(List.of(edge), h.takeKeys());
    }
    // Two client processes on host-a's address called that server: no telling whose the server's record
    // was (External client), while the clients' records find the server's one process.
    try (EdgePairing h = new EdgePairing(3_600_000, 10_000)) {
      h.element(mergedClient, 1000);
      h.element(tx("CLIENT", "host-a", "10.0.0.1", 40001, "10.0.0.2", 8080, 101, 5001, 1000), 1000);
      h.element(server(1000), 1000);
      h.watermark(9999);
      assertEquals(List.of("E:10.0.0.1>P:" + P, "P:host-a/100/5000>P:" + P, "P:host-a/101/5001>P:" + P),
          h.takeKeys().stream().sorted().toList());
    }
  }

  /**
   * State TTL of processing time (1 s here), refreshed by every access: a process's group is kept
   * while its samples or transactions come and forgotten a TTL after the last; an edge end likewise,
   * its peer's records refreshing it too.
   */
  @Test
  void mappingsAreKeptWhileUsedAndForgottenATtlAfterTheLastUse() throws Exception {
    var h = new KeyedTwoInputStreamOperatorTestHarness<String, MetricInput, Transaction, MetricInput>(
        new KeyedCoProcessOperator<>(new ProcessGroups(1000, 10_000, 30_000)), new ProcessGroups.ByEntity(),
        new ProcessGroups.ByProcess(), Types.STRING);
    h.open();
    h.setStateTtlProcessingTime(0);
    h.processElement1(new StreamRecord<>(processSample("c", "pod-x"), 1000));
    h.setStateTtlProcessingTime(900);
    h.processElement2(new StreamRecord<>(server(1000), 1000));
    assertEquals(4, records(h.getOutput()).size(), "900 ms after the sample: known");
    h.getOutput().clear();
    h.setStateTtlProcessingTime(1800);
    h.processElement2(new StreamRecord<>(server(1000), 1000));
    assertEquals(4, records(h.getOutput()).size(), "1,800 ms after the sample, 900 after the last transaction: known");
    h.getOutput().clear();
    // 1,100 ms after the last use: forgotten.
    h.setStateTtlProcessingTime(2900);
    h.processElement2(new StreamRecord<>(server(1000), 1000));
    h.processWatermark1(new Watermark(9999));
    h.processWatermark2(new Watermark(9999));
    assertEquals(List.of("PROCESS|host-b|" + P, "HOST|host-b|host-b"),
        TransactionJoinsTest.<MetricInput>records(h.getOutput()).stream().map(r -> r.getValue().key()).toList());
    h.close();

    try (EdgePairing e = new EdgePairing(1000, 10_000)) {
      e.setStateTtlProcessingTime(0);
      e.element(server(1000), 1000);
      e.setStateTtlProcessingTime(600);
      e.element(client(1000), 1000);
      e.watermark(9999);
      assertEquals(List.of("P:host-a/100/5000>P:" + P, "P:host-a/100/5000>P:" + P), e.takeKeys(),
          "the client's record at once, the server's at its window's end");
      // 1,500 ms after the server's own record, but 900 after the client's read it: still known.
      e.setStateTtlProcessingTime(1500);
      e.element(client(11_000), 11_000);
      assertEquals(1, e.take().size());
      // 1,200 ms after the last use: the client's next record waits for its peer until its window's
      // end, then counts for the External server.
      e.setStateTtlProcessingTime(2700);
      e.element(client(21_000), 21_000);
      assertEquals(0, e.take().size());
      e.watermark(29_999);
      assertEquals(List.of("P:host-a/100/5000>E:10.0.0.2:8080"), e.takeKeys());
    }
  }

  @Test
  void aPodsNamespaceLearntFromItsProcessSamplesGetsItsTransactions() throws Exception {
    var h = new KeyedTwoInputStreamOperatorTestHarness<String, MetricInput, Transaction, MetricInput>(
        new KeyedCoProcessOperator<>(new ProcessGroups(3_600_000, 10_000, 30_000)), new ProcessGroups.ByEntity(),
        new ProcessGroups.ByProcess(), Types.STRING);
    h.open();
    MetricInput named = processSample("c", "pod-x");
    named.pod = PodMetadata.of("x", "shop", java.util.Map.of());
    h.processElement1(new StreamRecord<>(named, 1000));
    // A later sample without metadata (the agent lost its pod source for a while) keeps the namespace.
    h.processElement1(new StreamRecord<>(processSample("c", "pod-x"), 1500));
    h.processElement2(new StreamRecord<>(server(2000), 2000));
    List<StreamRecord<MetricInput>> out = records(h.getOutput());
    assertEquals(List.of("PROCESS|host-b|" + P, "GROUP|host-b|c", "POD|host-b|pod-x", "NAMESPACE|host-b|shop",
        "HOST|host-b|host-b"), out.stream().map(r -> r.getValue().key()).toList());
    MetricInput ns = out.get(3).getValue();
    assertEquals("c", ns.groupId);
    assertEquals("pod-x", ns.podUid);
    assertEquals(2000, out.get(3).getTimestamp());
    h.getOutput().clear();
    // The process moved to another pod whose agent reports no metadata: no namespace any more.
    h.processElement1(new StreamRecord<>(processSample("d", "pod-y"), 3000));
    h.processElement2(new StreamRecord<>(server(3500), 3500));
    assertEquals(List.of("PROCESS|host-b|" + P, "GROUP|host-b|d", "POD|host-b|pod-y", "HOST|host-b|host-b"),
        records(h.getOutput()).stream().map(r -> ((MetricInput) r.getValue()).key()).toList());
    h.close();
  }

  public static MetricInput processSample(String group, String pod) {
    Sample s = new Sample();
    s.scope = "PROCESS";
    s.hostId = "host-b";
    s.tgid = 200;
    s.processStartTimeNs = 6000;
    s.groupId = group;
    s.podUid = pod;
    s.intervalEndNs = 1_000_000_000L;
    s.intervalStartNs = 0;
    return MetricInput.of(s, MetricInput.PROCESS, P);
  }

  /**
   * An agent's replayed TransactionStats record (same record id) is dropped by the first keyed step
   * of each path, before anything is summed: once for the entity windows (ProcessGroups), once for
   * the edge windows (TransactionEdges); its window's ids are forgotten once the window, the
   * lateness (30 s) and one more window have passed (no timers).
   */
  @Test
  void replayedRecordsAreDroppedUntilTheirWindowCanTakeNoMoreInput() throws Exception {
    var groups = new KeyedTwoInputStreamOperatorTestHarness<String, MetricInput, Transaction, MetricInput>(
        new KeyedCoProcessOperator<>(new ProcessGroups(3_600_000, 10_000, 30_000)), new ProcessGroups.ByEntity(),
        new ProcessGroups.ByProcess(), Types.STRING);
    groups.open();
    groups.processElement1(new StreamRecord<>(processSample("c", "pod-x"), 1000));
    Transaction a = server(1000);
    a.recordId = 11;
    Transaction b = server(2000);
    b.recordId = 12;
    Transaction noId = server(3000);
    for (Transaction t : List.of(a, b, a, noId, b, noId)) {
      groups.processElement2(new StreamRecord<>(t, t.eventTimeMs()));
    }
    assertEquals(4 * 4, records(groups.getOutput()).size(), "a and b once, the record without an id twice, 4 levels each");
    groups.getOutput().clear();
    // After the window fired, within the lateness: still a duplicate.
    groups.processWatermark1(new Watermark(35_000));
    groups.processWatermark2(new Watermark(35_000));
    groups.processElement2(new StreamRecord<>(a, 1000));
    assertEquals(0, records(groups.getOutput()).size());
    // Window [0, 10 s) + 30 s lateness + 10 s: forgotten (the windows drop the record as late now).
    groups.processWatermark1(new Watermark(49_999));
    groups.processWatermark2(new Watermark(49_999));
    assertEquals(0, groups.numEventTimeTimers(), "no timers");
    groups.processElement2(new StreamRecord<>(a, 1000));
    assertEquals(4, records(groups.getOutput()).size());
    groups.close();

    var edges = new KeyedOneInputStreamOperatorTestHarness<String, Transaction, EdgeInput>(
        new KeyedProcessOperator<>(new TransactionEdges(3_600_000, 10_000, 30_000)), new TransactionEdges.ByConnection(),
        Types.STRING);
    edges.open();
    Transaction c = client(1000);
    c.recordId = 21;
    for (Transaction t : List.of(a, c, a, c, b)) {
      edges.processElement(new StreamRecord<>(t, t.eventTimeMs()));
    }
    edges.processWatermark(new Watermark(9999));
    assertEquals(3, records(edges.getOutput()).size(), "a, c and b once each");
    edges.close();
  }

  public static Transaction server(long ms) {
    return tx("SERVER", "host-b", "10.0.0.2", 8080, "10.0.0.1", 40000, 200, 6000, ms);
  }

  static Transaction client(long ms) {
    return tx("CLIENT", "host-a", "10.0.0.1", 40000, "10.0.0.2", 8080, 100, 5000, ms);
  }

  public static Transaction tx(String role, String host, String lip, int lport, String rip, int rport, int tgid, long start,
      long ms) {
    Transaction t = new Transaction();
    t.role = role;
    t.hostId = host;
    t.localIp = lip;
    t.localPort = lport;
    t.remoteIp = rip;
    t.remotePort = rport;
    t.tgid = tgid;
    t.processStartTimeNs = start;
    t.intervalEndNs = ms * 1_000_000L + 1;
    t.intervalStartNs = t.intervalEndNs - 1_000_000L;
    t.transactions = 1;
    t.subBucketBits = 7;
    t.buckets = new int[] {5};
    t.counts = new long[] {1};
    return t;
  }

  @SuppressWarnings("unchecked")
  public static <T> List<StreamRecord<T>> records(Iterable<Object> output) {
    List<StreamRecord<T>> out = new ArrayList<>();
    for (Object o : output) {
      if (o instanceof StreamRecord<?> r) {
        out.add((StreamRecord<T>) r);
      }
    }
    return out;
  }
}
