package io.wattgraph.stream.transaction;

import static io.wattgraph.stream.transaction.TransactionJoinsTest.client;
import static io.wattgraph.stream.transaction.TransactionJoinsTest.server;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.window.WindowHarness;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * A connection's two ends reaching the job far apart (issue 24, the soak's finding): one end's agent
 * cut off from the broker, or restarted with its spool, so its records come after the watermark
 * passed their window. The pairing steps and the production edge windows (10 s, lateness 30 s) in
 * Flink's harness, each watermark through both: the final revision of every window counts each
 * transaction once, on its real edge, whatever came first, as long as the window can still be revised.
 */
public class LateTransactionPeersTest {
  static final String EDGE = "P:host-a/100/5000>P:" + TransactionJoinsTest.P;
  static final String EXTERNAL_SERVER = "P:host-a/100/5000>E:10.0.0.2:8080";

  /** The pairing steps feeding the edge windows, as CorrelationJob wires them. */
  static final class Pipeline implements AutoCloseable {
    final EdgePairing pairing;
    final KeyedOneInputStreamOperatorTestHarness<String, EdgeInput, EdgeMetricsRow> windows = WindowHarness.of(
        CorrelationJob::edgeWindows, EdgeInput.class, new EdgeWindowAggregate.ByEdge(), WindowHarness.config(30_000));
    /** The newest revision of each window of each edge, by "key@windowEndMs". */
    final Map<String, EdgeMetricsRow> latest = new TreeMap<>();
    final Map<String, Integer> revisions = new TreeMap<>();

    Pipeline() throws Exception {
      pairing = new EdgePairing(3_600_000, 10_000);
      windows.open();
    }

    /** A restart of {@code before} from a checkpoint taken now (what it emitted is kept, as the sinks keep it). */
    Pipeline(Pipeline before) throws Exception {
      pairing = new EdgePairing(3_600_000, 10_000, before.pairing.snapshot(1));
      windows.initializeState(before.windows.snapshot(1, 1));
      windows.open();
      latest.putAll(before.latest);
      revisions.putAll(before.revisions);
      before.close();
    }

    void element(io.wattgraph.stream.Transaction t) throws Exception {
      pairing.element(t, t.eventTimeMs());
      forward();
    }

    void watermark(long w) throws Exception {
      pairing.watermark(w);
      forward();
      windows.processWatermark(new Watermark(w));
      collect();
    }

    private void forward() throws Exception {
      for (StreamRecord<EdgeInput> r : pairing.take()) {
        windows.processElement(r);
      }
      collect();
    }

    private void collect() {
      for (StreamRecord<EdgeMetricsRow> r : TransactionJoinsTest.<EdgeMetricsRow>records(windows.getOutput())) {
        EdgeMetricsRow row = r.getValue();
        String k = row.key() + "@" + row.windowEndNs / 1_000_000;
        Integer seen = revisions.get(k);
        assertEquals(seen == null ? 0 : seen + 1, row.revision, "revisions of " + k + " in order");
        revisions.put(k, row.revision);
        latest.put(k, row);
      }
      windows.getOutput().clear();
    }

    /** Windows with transactions in their newest revision, as "key@end=client/server". */
    List<String> counted() {
      return latest.entrySet().stream()
          .filter(e -> e.getValue().tx.clientTransactions != 0 || e.getValue().tx.serverTransactions != 0)
          .map(e -> e.getKey() + "=" + e.getValue().tx.clientTransactions + "/" + e.getValue().tx.serverTransactions)
          .toList();
    }

    @Override
    public void close() throws Exception {
      pairing.close();
      windows.close();
    }
  }

  /**
   * The soak's order: the client's record, the watermark past its window's end (it counts for the
   * External server), then the server's record of the same window. The External window's next
   * revision gives it back (bytes and latencies too), the real edge's has both ends. And the other
   * way round: a lone server end on the External client's edge, its client end late.
   */
  @Test
  void anEndAfterItsPeersWindowClosedMovesThePeerFromTheExternalEdge() throws Exception {
    for (boolean clientFirst : new boolean[] {true, false}) {
      io.wattgraph.stream.Transaction first = clientFirst ? withBytes(client(1000)) : withBytes(server(1000));
      io.wattgraph.stream.Transaction late = clientFirst ? withBytes(server(1000)) : withBytes(client(1000));
      String external = clientFirst ? EXTERNAL_SERVER : "E:10.0.0.1>P:" + TransactionJoinsTest.P;
      try (Pipeline p = new Pipeline()) {
        p.element(first);
        p.watermark(9999);
        assertEquals(List.of(external + "@10000=" + (clientFirst ? "1/0" : "0/1")), p.counted(),
            "alone at its window's end: External");
        p.element(late);
        p.watermark(12_000);
        assertEquals(List.of(EDGE + "@10000=1/1"), p.counted(), "clientFirst=" + clientFirst);
        EdgeMetricsRow gone = p.latest.get(external + "@10000");
        assertEquals(1, gone.revision, "the External window revised once");
        assertEquals(0, gone.requestBytes + gone.responseBytes);
        assertEquals(null, (clientFirst ? gone.clientRtt : gone.serverTime).p50Ns, "no latency left");
        EdgeMetricsRow real = p.latest.get(EDGE + "@10000");
        assertEquals(100, real.requestBytes);
        assertEquals(1000, real.responseBytes);
        assertEquals(2, real.tx.clientRtt.counts[0] + real.tx.serverTime.counts[0], "one latency of each end");
      }
    }
  }

  private static io.wattgraph.stream.Transaction withBytes(io.wattgraph.stream.Transaction t) {
    t.requestBytes = 100;
    t.responseBytes = 1000;
    return t;
  }

  /**
   * An agent cut off for longer than the lateness lets through: the client's records of three windows
   * go to the External edge one by one, then the server's come in a burst. The oldest window is revised
   * by the watermark that closes it for good (its records reach it before that watermark does).
   */
  @Test
  void aBurstOfLateServerEndsMovesEveryWindowStillOpen() throws Exception {
    try (Pipeline p = new Pipeline()) {
      for (long t : new long[] {1000, 11_000, 21_000}) {
        p.element(client(t));
        p.watermark(t + 8999);
      }
      assertEquals(List.of(EXTERNAL_SERVER + "@10000=1/0", EXTERNAL_SERVER + "@20000=1/0",
          EXTERNAL_SERVER + "@30000=1/0"), p.counted());
      for (long t : new long[] {1000, 11_000, 21_000}) {
        p.element(server(t));
      }
      p.watermark(39_999);
      assertEquals(List.of(EDGE + "@10000=1/1", EDGE + "@20000=1/1", EDGE + "@30000=1/1"), p.counted());
    }
  }

  /**
   * The server's first record comes while the client's, released by TransactionEdges at its window's
   * end, still waits for the watermark in MaskedPeers, behind a server endpoint served by two
   * processes (pre-forked workers: the masked key's server role is ambiguous). Its note overtakes the
   * record, which goes to the note's process, not to the External server (nothing would move it later).
   */
  @Test
  void aPeersNoteThatOvertakesTheWaitingRecordPairsIt() throws Exception {
    try (EdgePairing p = new EdgePairing(3_600_000, 10_000)) {
      p.element(TransactionJoinsTest.tx("SERVER", "host-b", "10.0.0.2", 8080, "10.0.0.1", 40001, 200, 6000, 1000), 1000);
      p.element(TransactionJoinsTest.tx("SERVER", "host-b", "10.0.0.2", 8080, "10.0.0.1", 40002, 201, 6001, 1000), 1000);
      p.element(client(1000), 1000);
      p.edges.processWatermark(new Watermark(9999));
      p.element(server(1000), 1000);
      p.masked.processWatermark(new Watermark(9999));
      List<String> clients = p.take().stream().filter(r -> r.getValue().transaction.isClient())
          .map(r -> r.getValue().key()).toList();
      assertEquals(List.of(EDGE), clients);
    }
  }

  /** The TaskManager killed between the lone end's release and its peer's arrival: the job restores and still moves it. */
  @Test
  void aMoveSurvivesARestoreFromACheckpoint() throws Exception {
    Pipeline before = new Pipeline();
    before.element(client(1000));
    before.watermark(9999);
    try (Pipeline p = new Pipeline(before)) {
      p.element(server(1000));
      p.watermark(12_000);
      assertEquals(List.of(EDGE + "@10000=1/1"), p.counted());
    }
  }

  /**
   * Beyond the lateness the windows cannot be revised: the server's record is dropped as late (counted
   * by the windows), the client's stays on the External edge and is counted as moved too late.
   */
  @Test
  void aPeerEndBeyondTheLatenessIsCounted() throws Exception {
    long before = TransactionEdges.PAST_LATENESS.get();
    try (Pipeline p = new Pipeline()) {
      p.element(client(1000));
      p.watermark(45_000);
      p.element(server(1000));
      p.watermark(50_000);
      assertEquals(List.of(EXTERNAL_SERVER + "@10000=1/0"), p.counted());
      assertEquals(1, TransactionEdges.PAST_LATENESS.get() - before, "the client's record, left on the External edge");
      // Its next records pair at once, nothing more is counted.
      p.element(client(51_000));
      p.element(server(51_000));
      p.watermark(59_999);
      assertEquals(1, TransactionEdges.PAST_LATENESS.get() - before);
      assertEquals(List.of(EXTERNAL_SERVER + "@10000=1/0", EDGE + "@60000=1/1"), p.counted());
    }
  }
}
