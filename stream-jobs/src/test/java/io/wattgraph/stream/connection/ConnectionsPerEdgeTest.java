package io.wattgraph.stream.connection;

import static io.wattgraph.stream.source.Observations.obs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.ConnectionState;
import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.Side;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ConnectionsPerEdgeTest {
  KeyedOneInputStreamOperatorTestHarness<String, ConnectionUpdate, EdgeRow> h;

  @BeforeEach
  void setUp() throws Exception {
    h = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionsPerEdge()), new ConnectionsPerEdge.ByEdge(), Types.STRING);
    h.open();
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
  }

  static ConnectionUpdate upsert(String connId, long c2s, long s2c, long first, long last) {
    ConnectionState s = new ConnectionState();
    s.connectionId = connId;
    s.low = Side.from(obs("host-a", 1, Role.CLIENT, "10.0.0.1", 40000, "10.0.0.2", 80, 100, c2s, s2c));
    s.high = Side.from(obs("host-b", 2, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", 40000, 200, s2c, c2s));
    ConnectionUpdate u = ConnectionView.of(s);
    u.firstSeenNs = first;
    u.lastSeenNs = last;
    return u;
  }

  /** The row once the retractions' first/last seen are recomputed (processing time moved on). */
  EdgeRow settled() throws Exception {
    h.setProcessingTime(h.getProcessingTime() + ConnectionsPerEdge.SEEN_SETTLE_MS);
    EdgeRow r = last();
    assertTrue(r != null && !r.delete, "a settled row");
    return r;
  }

  /**
   * Late peers from a spool retract the lone ends of one External edge in a burst, each the edge's
   * earliest: the edge's live connections are gone over once for the burst, not once per retraction.
   */
  @Test
  void aBurstOfRetractionsRecomputesFirstAndLastSeenOnce() throws Exception {
    ConnectionUpdate first = upsert("c0", 1, 1, 0, 1);
    h.processElement(first, 0);
    for (int i = 1; i < 10_000; i++) {
      h.processElement(upsert("c" + i, 1, 1, i, i + 1), 0);
    }
    long before = ConnectionsPerEdge.SEEN_RECOMPUTED.get();
    for (int i = 0; i < 9_990; i++) {
      h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.RETRACT, "c" + i, first.edgeKey), 0);
    }
    EdgeRow r = last();
    assertEquals(10, r.connections, "counts exact in every row");
    assertEquals(10, r.bytesClientToServer);
    r = settled();
    assertEquals(1, ConnectionsPerEdge.SEEN_RECOMPUTED.get() - before, "one pass");
    assertEquals(9_990, r.firstSeenNs);
    assertEquals(10_000, r.lastSeenNs);
    assertEquals(0, h.numProcessingTimeTimers());
  }

  EdgeRow last() {
    List<EdgeRow> rows = h.extractOutputValues();
    h.getOutput().clear();
    return rows.isEmpty() ? null : rows.get(rows.size() - 1);
  }

  /**
   * A later connection of the same processes whose agent could not read the server's command
   * line (it had exited) must not erase it from the edge's row: only the newest row per edge may
   * reach Neo4j.
   */
  @Test
  void aConnectionWithoutCmdlineKeepsTheOneAnotherKnew() throws Exception {
    h.processElement(upsert("c1", 10, 20, 5, 6), 0);
    ConnectionUpdate c2 = upsert("c2", 1, 2, 7, 8);
    c2.server.cmdline = null;
    c2.server.containerId = null;
    h.processElement(c2, 0);
    EdgeRow r = last();
    assertEquals("/usr/bin/proc200 --serve", r.server.cmdline);
    assertEquals(11, r.bytesClientToServer);
  }

  @Test
  void sumsConnectionsAsAbsoluteTotals() throws Exception {
    h.processElement(upsert("c1", 10, 20, 5, 6), 0);
    h.processElement(upsert("c2", 1, 2, 3, 9), 0);
    h.processElement(upsert("c1", 15, 25, 5, 7), 0); // c1 grew: replaces, not adds
    EdgeRow r = last();
    assertEquals(16, r.bytesClientToServer);
    assertEquals(27, r.bytesServerToClient);
    assertEquals(2, r.connections);
    assertEquals(3, r.firstSeenNs);
    assertEquals(9, r.lastSeenNs);
    assertEquals("host-a/100/100000", r.client.id);
  }

  @Test
  void retractionsRemoveConnectionsAndTheLastDeletesTheEdge() throws Exception {
    ConnectionUpdate c1 = upsert("c1", 10, 20, 5, 6);
    h.processElement(c1, 0);
    h.processElement(upsert("c2", 1, 2, 3, 9), 0);
    last();
    h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.RETRACT, "c2", c1.edgeKey), 0);
    EdgeRow r = last();
    assertEquals(10, r.bytesClientToServer);
    assertEquals(1, r.connections);
    r = settled();
    assertEquals(5, r.firstSeenNs);
    assertEquals(6, r.lastSeenNs);
    h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.RETRACT, "c1", c1.edgeKey), 0);
    r = last();
    assertTrue(r.delete);
    assertEquals(c1.edgeKey, r.edgeKey);
  }

  @Test
  void finishedConnectionsStayInTheTotals() throws Exception {
    ConnectionUpdate c1 = upsert("c1", 10, 20, 5, 6);
    h.processElement(c1, 0);
    last();
    h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.FINISHED, "c1", c1.edgeKey), 0);
    assertEquals(null, last(), "finishing emits nothing");
    h.processElement(upsert("c2", 1, 2, 7, 8), 0);
    EdgeRow r = last();
    assertEquals(11, r.bytesClientToServer);
    assertEquals(2, r.connections);
    h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.RETRACT, "c2", c1.edgeKey), 0);
    r = last();
    assertEquals(10, r.bytesClientToServer);
    assertEquals(1, r.connections);
    r = settled();
    assertEquals(5, r.firstSeenNs);
    assertEquals(6, r.lastSeenNs);
  }

  static ConnectionUpdate weighing(ConnectionUpdate u, double weight) {
    u.weight = weight;
    return u;
  }

  @Test
  void withoutSamplingTheEstimateIsTheCountExactly() throws Exception {
    ConnectionUpdate c1 = upsert("c1", 10, 20, 5, 6);
    assertEquals(1.0, c1.weight);
    h.processElement(c1, 0);
    h.processElement(upsert("c2", 1, 2, 3, 9), 0);
    EdgeRow r = last();
    assertEquals(2, r.connections);
    assertEquals(2.0, r.connectionsEstimated);
    assertEquals(0, r.connectionsSampled);
  }

  /**
   * Sampled connections add their weights; a weight that changes (a lone server end whose client
   * end joined) replaces the old one; a retraction takes its weight away.
   */
  @Test
  void weightsAddUpAndAreReplacedAndRetractedAsDeltas() throws Exception {
    ConnectionUpdate c1 = weighing(upsert("c1", 10, 20, 5, 6), 2.0);
    h.processElement(c1, 0);
    h.processElement(upsert("c2", 1, 2, 3, 9), 0);
    h.processElement(weighing(upsert("c3", 1, 1, 3, 9), 0.0), 0); // shed by an end: bytes only
    EdgeRow r = last();
    assertEquals(3, r.connections);
    assertEquals(3.0, r.connectionsEstimated);
    assertEquals(2, r.connectionsSampled);
    assertEquals(12, r.bytesClientToServer);

    h.processElement(weighing(upsert("c1", 15, 20, 5, 7), 4.0), 0);
    r = last();
    assertEquals(3, r.connections);
    assertEquals(5.0, r.connectionsEstimated, "c1 now 4, not 2 + 4");
    assertEquals(2, r.connectionsSampled);

    h.processElement(weighing(upsert("c1", 16, 20, 5, 7), 1.0), 0);
    r = last();
    assertEquals(2.0, r.connectionsEstimated, "and back to 1");
    assertEquals(1, r.connectionsSampled);

    h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.RETRACT, "c3", c1.edgeKey), 0);
    r = last();
    assertEquals(2, r.connections);
    assertEquals(2.0, r.connectionsEstimated);
    assertEquals(0, r.connectionsSampled);
  }

  /** Weights that do not add up exactly in floating point leave nothing behind once retracted. */
  @Test
  void retractingEverySampledConnectionLeavesTheCountExactly() throws Exception {
    ConnectionUpdate first = upsert("u0", 1, 1, 1, 1);
    h.processElement(first, 0);
    for (int i = 1; i <= 10; i++) {
      h.processElement(weighing(upsert("s" + i, 1, 1, 1, 1), 1 / 0.3), 0);
    }
    h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.FINISHED, "s1", first.edgeKey), 0);
    EdgeRow r = last();
    assertEquals(11, r.connections);
    assertEquals(1 + 10 / 0.3, r.connectionsEstimated, 1e-9);
    for (int i = 2; i <= 10; i++) {
      h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.RETRACT, "s" + i, first.edgeKey), 0);
    }
    r = last();
    assertEquals(2, r.connections);
    assertEquals(1 + 1 / 0.3, r.connectionsEstimated, 1e-9, "the finished one stays in the totals");
    assertEquals(1, r.connectionsSampled);
    h.processElement(upsert("u1", 1, 1, 1, 1), 0);
    assertEquals(3, last().connections);
  }

  @Test
  void onceNoSampledConnectionIsLeftTheEstimateIsTheCountExactly() throws Exception {
    ConnectionUpdate first = upsert("u0", 1, 1, 1, 1);
    h.processElement(first, 0);
    double[] ps = {0.3, 0.7, 0.9, 0.45};
    for (int i = 0; i < ps.length; i++) {
      h.processElement(weighing(upsert("s" + i, 1, 1, 1, 1), 1 / ps[i]), 0);
    }
    for (int i = 0; i < ps.length; i++) {
      h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.RETRACT, "s" + i, first.edgeKey), 0);
    }
    EdgeRow r = last();
    assertEquals(1, r.connections);
    assertEquals(0, r.connectionsSampled);
    // Adding and subtracting these weights leaves -6.7e-16 in floating point.
    assertEquals(1.0, r.connectionsEstimated);
  }

  @Test
  void aContinuationIsNeitherCountedNorEstimated() throws Exception {
    ConnectionUpdate c1 = upsert("c1", 10, 20, 5, 6);
    h.processElement(c1, 0);
    h.processElement(ConnectionUpdate.marker(ConnectionUpdate.Type.FINISHED, "c1", c1.edgeKey), 0);
    ConnectionUpdate next = weighing(upsert("c1#1", 5, 5, 7, 8), 0.0);
    next.continuation = true;
    h.processElement(next, 0);
    EdgeRow r = last();
    assertEquals(1, r.connections);
    assertEquals(1.0, r.connectionsEstimated);
    assertEquals(0, r.connectionsSampled);
    assertEquals(15, r.bytesClientToServer);
  }
}
