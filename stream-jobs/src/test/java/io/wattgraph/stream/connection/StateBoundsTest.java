package io.wattgraph.stream.connection;

import static io.wattgraph.stream.source.Observations.at;
import static io.wattgraph.stream.source.Observations.closed;
import static io.wattgraph.stream.source.Observations.obs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.source.Observation;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * State bounds of the correlator (operator harness, processing time driven by hand): closed
 * connections and idle keys expire by timers; a connection whose CLOSED never arrives is folded
 * into its edge's totals after the idle timeout, and continues without double counting if it wakes.
 */
class StateBoundsTest {
  static final long HORIZON = 1000;
  static final long RETENTION = 5000;
  static final long IDLE = 60_000;

  KeyedOneInputStreamOperatorTestHarness<String, Observation, ConnectionUpdate> h;
  KeyedOneInputStreamOperatorTestHarness<String, ConnectionUpdate, EdgeRow> edges;

  @BeforeEach
  void setUp() throws Exception {
    h = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionCorrelator(HORIZON, RETENTION, IDLE)),
        new ConnectionCorrelator.ByConnection(), Types.STRING);
    h.open();
    h.setProcessingTime(0);
    edges = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionsPerEdge()), new ConnectionsPerEdge.ByEdge(), Types.STRING);
    edges.open();
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
    edges.close();
  }

  static Observation client(long sent, long recv) {
    return obs("host-a", 11, Role.CLIENT, "10.0.0.1", 40000, "10.0.0.2", 80, 100, sent, recv);
  }

  static Observation server(long sent, long recv) {
    return obs("host-b", 22, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", 40000, 200, sent, recv);
  }

  /** Correlator output since the last call, fed on to the edge aggregator; returns the correlator's. */
  List<ConnectionUpdate> drain() throws Exception {
    List<ConnectionUpdate> r = h.extractOutputValues();
    h.getOutput().clear();
    for (ConnectionUpdate u : r) {
      edges.processElement(u, 0);
    }
    return r;
  }

  /** The edge's latest row. */
  EdgeRow lastRow() {
    List<EdgeRow> rows = edges.extractOutputValues();
    return rows.get(rows.size() - 1);
  }

  @Test
  void closedConnectionIsForgottenAfterTheConfiguredRetention() throws Exception {
    h.processElement(closed(client(10, 20)), 0);
    h.processElement(closed(server(20, 10)), 0);
    assertEquals(1, h.numKeyedStateEntries());
    h.setProcessingTime(RETENTION - 1);
    assertEquals(1, h.numKeyedStateEntries(), "kept during the retention");
    h.setProcessingTime(RETENTION);
    assertEquals(0, h.numKeyedStateEntries(), "forgotten after it");
    h.setProcessingTime(3 * IDLE);
    assertEquals(0, h.numKeyedStateEntries());
    assertEquals(0, h.numProcessingTimeTimers(), "no timers left behind");
    assertEquals(0, h.numEventTimeTimers(), "nor the end-of-input timer");
  }

  @Test
  void connectionWhoseCloseNeverArrivesIsFoldedIntoTotalsThenForgotten() throws Exception {
    h.processElement(client(100, 500), 0);
    h.processElement(server(500, 100), 0);
    drain();
    assertEquals(100, lastRow().bytesClientToServer);

    h.setProcessingTime(IDLE - 1);
    assertEquals(List.of(), drain(), "nothing before the idle timeout");
    h.setProcessingTime(IDLE);
    List<ConnectionUpdate> out = drain();
    assertEquals(List.of(ConnectionUpdate.Type.FINISHED), out.stream().map(u -> u.type).toList());
    assertEquals(1, h.numKeyedStateEntries(), "a tombstone for one more idle period");
    EdgeRow row = lastRow();
    assertEquals(100, row.bytesClientToServer, "the connection stays in the totals");
    assertEquals(500, row.bytesServerToClient);
    assertEquals(1, row.connections);

    h.setProcessingTime(2 * IDLE);
    assertEquals(0, h.numKeyedStateEntries(), "key forgotten");
    assertEquals(0, h.numEventTimeTimers(), "with its end-of-input timer");
    assertEquals(List.of(), drain(), "forgetting the tombstone emits nothing");
  }

  @Test
  void activityPushesTheIdleTimeoutBack() throws Exception {
    h.processElement(client(1, 1), 0);
    h.processElement(server(1, 1), 0);
    h.setProcessingTime(IDLE / 2);
    h.processElement(client(2, 2), 0);
    drain();
    h.setProcessingTime(IDLE);
    assertEquals(List.of(), drain(), "active half an idle period ago: kept");
    h.setProcessingTime(IDLE / 2 + IDLE);
    assertEquals(List.of(ConnectionUpdate.Type.FINISHED), drain().stream().map(u -> u.type).toList());
  }

  @Test
  void idleConnectionThatWakesUpContinuesWithoutDoubleCounting() throws Exception {
    h.processElement(client(100, 500), 0);
    h.processElement(server(500, 100), 0);
    h.setProcessingTime(IDLE);
    drain();
    assertEquals(1, lastRow().connections);

    // The same sockets report again (cumulative counters went on from 100/500).
    h.setProcessingTime(IDLE + 10);
    h.processElement(client(130, 900), 0);
    List<ConnectionUpdate> out = drain();
    assertEquals(1, out.size());
    assertTrue(out.get(0).continuation);
    assertEquals(0.0, out.get(0).weight, "not counted again");
    assertEquals(30, out.get(0).bytesClientToServer, "only the bytes since the expiry");
    assertEquals(400, out.get(0).bytesServerToClient);
    EdgeRow row = lastRow();
    assertEquals(130, row.bytesClientToServer, "edge totals equal the socket's counters");
    assertEquals(900, row.bytesServerToClient);
    assertEquals(1, row.connections, "still one connection");
    assertEquals(1.0, row.connectionsEstimated);

    h.processElement(closed(server(900, 130)), 0);
    h.processElement(closed(client(130, 900)), 0);
    drain();
    h.setProcessingTime(IDLE + 10 + RETENTION);
    drain();
    assertEquals(0, h.numKeyedStateEntries());
    assertEquals(130, lastRow().bytesClientToServer);
    assertEquals(1, lastRow().connections);
  }

  @Test
  void oneSidedConnectionIdleExpiresOnItsExternalEdge() throws Exception {
    h.processElement(client(7, 8), 0);
    h.setProcessingTime(HORIZON);
    List<ConnectionUpdate> out = drain();
    assertEquals("E:10.0.0.2:80", out.get(0).server.qualifiedId());
    h.setProcessingTime(IDLE);
    assertEquals(List.of(ConnectionUpdate.Type.FINISHED), drain().stream().map(u -> u.type).toList());
    EdgeRow row = lastRow();
    assertFalse(row.delete);
    assertEquals(7, row.bytesClientToServer);
    h.setProcessingTime(2 * IDLE);
    assertEquals(0, h.numKeyedStateEntries());
  }

  /**
   * A lone end withheld because its peer host sheds (load shedding) that goes idle was never on an
   * edge: nothing to fold. If its socket and then the peer report again, it is counted whole, not as
   * a continuation.
   */
  @Test
  void aWithheldConnectionThatGoesIdleIsNotFoldedAndWakesUpWhole() throws Exception {
    Observation sampled = obs("host-b", 99, Role.SERVER, "10.0.0.2", 80, "10.0.0.3", 41000, 200, 1, 1);
    sampled.keepProbability = 0.5;
    h.processElement(sampled, 0); // host-b sheds; this end of its own stays lone (no agent at 10.0.0.3)
    h.processElement(client(7, 8), 0);
    h.setProcessingTime(HORIZON);
    drain();
    List<EdgeRow> rows = edges.extractOutputValues();
    assertEquals(1, rows.size(), "only host-b's own lone end: " + rows);
    assertEquals("E:10.0.0.3>P:host-b/200/200000", rows.get(0).edgeKey);
    assertEquals(2.0, rows.get(0).connectionsEstimated);

    h.setProcessingTime(IDLE);
    List<ConnectionUpdate> out = drain();
    assertEquals(1, out.size(), "host-b's connection finishes; the withheld one emits nothing: " + out);
    assertTrue(out.get(0).edgeKey.startsWith("E:10.0.0.3>"));

    h.setProcessingTime(IDLE + 10);
    h.processElement(client(9, 8), 0);
    Observation peer = server(8, 9);
    peer.keepProbability = 0.0;
    h.processElement(peer, 0);
    out = drain();
    assertEquals(1, out.size(), out.toString());
    assertFalse(out.get(0).continuation);
    assertEquals(9, out.get(0).bytesClientToServer, "all its bytes");
    EdgeRow row = lastRow();
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", row.edgeKey);
    assertEquals(1, row.connections);
    assertEquals(1.0, row.connectionsEstimated, "shed by host-b, kept whole by its client: one connection");
    assertEquals(0, row.connectionsSampled);
  }

  @Test
  void manyShortConnectionsLeaveNoState() throws Exception {
    for (int i = 0; i < 200; i++) {
      h.processElement(closed(obs("host-a", i, Role.CLIENT, "10.0.0.1", 30000 + i, "10.0.0.2", 80, 100, 5, 6)), 0);
      h.processElement(closed(obs("host-b", 1000 + i, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", 30000 + i, 200, 6, 5)), 0);
    }
    for (int i = 0; i < 100; i++) { // CLOSED lost on both ends
      h.processElement(obs("host-a", 5000 + i, Role.CLIENT, "10.0.0.1", 50000 + i, "10.0.0.2", 80, 100, 5, 6), 0);
    }
    assertEquals(300, h.numKeyedStateEntries());
    h.setProcessingTime(RETENTION);
    assertEquals(100, h.numKeyedStateEntries(), "closed ones gone");
    h.setProcessingTime(IDLE);
    assertEquals(100, h.numKeyedStateEntries(), "idle ones folded, tombstones kept");
    h.setProcessingTime(2 * IDLE);
    assertEquals(0, h.numKeyedStateEntries(), "idle ones gone");
    drain();
    List<EdgeRow> rows = edges.extractOutputValues();
    EdgeRow toProcess = rows.stream().filter(r -> r.edgeKey.endsWith("P:host-b/200/200000")).reduce((a, b) -> b).get();
    // The lone ones go to the process the pairs showed serving 10.0.0.2:80, not to an External.
    assertTrue(rows.stream().noneMatch(r -> r.edgeKey.endsWith("E:10.0.0.2:80")), "no External node");
    assertEquals(300, toProcess.connections, "the closed connections and the lone idle ones, folded in");
    assertEquals(300 * 5, toProcess.bytesClientToServer);
  }

  /**
   * An agent that crashed replays from its spool what Kafka had not confirmed (at least once): the
   * events of a connection the job already counted, closed and forgot. Within the duplicate horizon
   * the tombstone drops them; a new socket on the same 4-tuple still counts as a new connection.
   */
  @Test
  void replayOfAForgottenConnectionIsDroppedWithinTheDuplicateHorizon() throws Exception {
    long duplicateHorizon = 10 * RETENTION;
    h.close();
    h = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionCorrelator(HORIZON, RETENTION, IDLE, duplicateHorizon)),
        new ConnectionCorrelator.ByConnection(), Types.STRING);
    h.open();
    h.setProcessingTime(0);
    h.processElement(client(10, 20), 0);
    h.processElement(closed(client(10, 20)), 0);
    h.processElement(closed(server(20, 10)), 0);
    h.setProcessingTime(RETENTION);
    drain();
    assertEquals(1, lastRow().connections);
    assertEquals(1, h.numKeyedStateEntries(), "a tombstone instead of the connection");
    assertEquals(0, h.numEventTimeTimers(), "without an end-of-input timer");

    // The replay, in the order the agents sent it first.
    h.setProcessingTime(2 * RETENTION);
    h.processElement(client(10, 20), 0);
    h.processElement(closed(client(10, 20)), 0);
    h.processElement(closed(server(20, 10)), 0);
    h.setProcessingTime(4 * RETENTION);
    assertEquals(List.of(), drain(), "nothing counted again");
    assertEquals(1, lastRow().connections);
    assertEquals(10, lastRow().bytesClientToServer);

    // A new connection on the same 4-tuple (other sockets) is one more.
    h.processElement(closed(obs("host-a", 12, Role.CLIENT, "10.0.0.1", 40000, "10.0.0.2", 80, 100, 3, 4)), 0);
    h.processElement(closed(obs("host-b", 23, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", 40000, 200, 4, 3)), 0);
    h.setProcessingTime(5 * RETENTION);
    drain();
    assertEquals(2, lastRow().connections);
    assertEquals(13, lastRow().bytesClientToServer);

    // The horizon is a memory of both processing time and the input's event time: with the input
    // stalled (every event at 1 ms), the tuple's two tombstones (newest and earlier) are kept.
    h.setProcessingTime(5 * RETENTION + duplicateHorizon);
    assertEquals(2, h.numKeyedStateEntries(), "value and list state of the key");
    // Another host's events move the input past it: the key is forgotten for good.
    h.processElement(at(closed(obs("host-c", 5, Role.CLIENT, "10.0.0.3", 41000, "10.0.0.9", 443, 300, 1, 1)),
        1_000_000L + duplicateHorizon * 1_000_000L + 1), 0);
    h.setProcessingTime(5 * RETENTION + 2 * duplicateHorizon);
    assertEquals(1, h.numKeyedStateEntries(), "only host-c's connection is left");
    assertEquals(1, h.numProcessingTimeTimers(), "no timers left behind but host-c's");
    assertEquals(1, h.numEventTimeTimers());
  }

  /**
   * A peer later than the closed retention (an agent's spool delivering it after an outage) pairs
   * with the lone end remembered whole for the memory: the External edge is retracted, the connection
   * counted once on its real edge. Before, the lone end was forgotten after the retention and the late
   * end started a new connection: counted twice (as in a Kafka outage).
   */
  @Test
  void aPeerLaterThanTheRetentionPairsWithTheRememberedLoneEnd() throws Exception {
    h.close();
    h = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionCorrelator(HORIZON, RETENTION, IDLE, 10 * RETENTION)),
        new ConnectionCorrelator.ByConnection(), Types.STRING);
    h.open();
    h.setProcessingTime(0);
    h.processElement(closed(client(10, 20)), 0);
    h.setProcessingTime(HORIZON + RETENTION);
    drain();
    assertEquals("E:10.0.0.2:80", lastRow().edgeKey.substring(lastRow().edgeKey.indexOf('>') + 1));
    h.processElement(closed(server(20, 10)), 0);
    h.setProcessingTime(2 * (HORIZON + RETENTION));
    List<ConnectionUpdate> out = drain();
    assertEquals(List.of(ConnectionUpdate.Type.RETRACT, ConnectionUpdate.Type.UPSERT, ConnectionUpdate.Type.FINISHED),
        out.stream().map(u -> u.type).toList(), out.toString());
    List<EdgeRow> rows = edges.extractOutputValues();
    assertTrue(rows.get(rows.size() - 2).delete, "the External edge is gone: " + rows);
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", lastRow().edgeKey);
    assertEquals(1, lastRow().connections);
    assertEquals(20, lastRow().bytesServerToClient);
  }
}
