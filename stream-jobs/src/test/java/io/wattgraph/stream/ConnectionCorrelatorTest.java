package io.wattgraph.stream;

import static io.wattgraph.stream.Observations.at;
import static io.wattgraph.stream.Observations.closed;
import static io.wattgraph.stream.Observations.obs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The correlator in Flink's operator test harness (real keyed state and timers). */
class ConnectionCorrelatorTest {
  static final long HORIZON = 3000;
  static final String A = "host-a";
  static final String B = "host-b";

  KeyedOneInputStreamOperatorTestHarness<String, Observation, ConnectionUpdate> h;

  @BeforeEach
  void setUp() throws Exception {
    h = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionCorrelator(HORIZON)),
        new CorrelationJob.ByConnection(), Types.STRING);
    h.open();
    h.setProcessingTime(0);
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
  }

  void in(Observation o) throws Exception {
    h.processElement(o, 0);
  }

  /** Output since the last call. */
  List<ConnectionUpdate> out() {
    List<ConnectionUpdate> r = h.extractOutputValues();
    h.getOutput().clear();
    return r;
  }

  static Observation client(long sent, long recv) {
    return obs(A, 11, Role.CLIENT, "10.0.0.1", 40000, "10.0.0.2", 80, 100, sent, recv);
  }

  static Observation server(long sent, long recv) {
    return obs(B, 22, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", 40000, 200, sent, recv);
  }

  @Test
  void pairsClientAndServerFromDifferentHostsWithByteMaxRule() throws Exception {
    in(client(100, 520));
    assertEquals(List.of(), out(), "nothing before the peer or the horizon");
    in(server(500, 90));
    List<ConnectionUpdate> o = out();
    assertEquals(1, o.size());
    ConnectionUpdate u = o.get(0);
    assertEquals(ConnectionUpdate.Type.UPSERT, u.type);
    assertEquals("host-a/100/100000", u.client.id);
    assertEquals(GraphNode.Kind.PROCESS, u.client.kind);
    assertEquals("host-b/200/200000", u.server.id);
    assertEquals("host-b", u.server.hostId);
    assertEquals("proc200", u.server.comm);
    assertEquals(100, u.bytesClientToServer, "max(client sent 100, server received 90)");
    assertEquals(520, u.bytesServerToClient, "max(server sent 500, client received 520)");

    // Later snapshots keep counters monotone even if one arrives with older values.
    in(server(400, 1000));
    u = out().get(0);
    assertEquals(1000, u.bytesClientToServer);
    assertEquals(520, u.bytesServerToClient);

    // Horizon passing after pairing changes nothing.
    h.setProcessingTime(HORIZON * 5);
    assertEquals(List.of(), out());
  }

  /** The server's CLOSED read after its process exited carries no command line: keep the known one. */
  @Test
  void aLaterObservationWithoutCmdlineKeepsTheKnownOne() throws Exception {
    in(client(100, 520));
    in(server(500, 90));
    out();
    Observation gone = closed(server(500, 90));
    gone.cmdline = null;
    in(gone);
    List<ConnectionUpdate> o = out();
    assertEquals("/usr/bin/proc200 --serve", o.get(o.size() - 1).server.cmdline);
  }

  @Test
  void serverFirstAlsoPairs() throws Exception {
    in(server(5, 7));
    in(client(7, 5));
    List<ConnectionUpdate> o = out();
    assertEquals(1, o.size());
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", o.get(0).edgeKey);
  }

  @Test
  void oneSidedClientBecomesExternalServerAfterHorizon() throws Exception {
    in(client(10, 20));
    h.setProcessingTime(HORIZON - 1);
    assertEquals(List.of(), out());
    h.setProcessingTime(HORIZON);
    List<ConnectionUpdate> o = out();
    assertEquals(1, o.size());
    ConnectionUpdate u = o.get(0);
    assertEquals(GraphNode.Kind.EXTERNAL, u.server.kind);
    assertEquals("10.0.0.2:80", u.server.id);
    assertEquals("10.0.0.2", u.server.address);
    assertEquals(80, u.server.port);
    assertEquals(10, u.bytesClientToServer);
    assertEquals(20, u.bytesServerToClient);

    // Further snapshots of the lone side are emitted right away.
    in(client(30, 40));
    assertEquals(30, out().get(0).bytesClientToServer);
  }

  @Test
  void oneSidedServerBecomesExternalClientWithoutPort() throws Exception {
    in(server(10, 20));
    h.setProcessingTime(HORIZON);
    ConnectionUpdate u = out().get(0);
    assertEquals(GraphNode.Kind.EXTERNAL, u.client.kind);
    assertEquals("10.0.0.1", u.client.id);
    assertNull(u.client.port);
    assertEquals(20, u.bytesClientToServer);
  }

  @Test
  void latePeerMovesTheConnectionFromTheExternalEdge() throws Exception {
    in(client(10, 20));
    h.setProcessingTime(HORIZON);
    ConnectionUpdate external = out().get(0);
    in(server(25, 12));
    List<ConnectionUpdate> o = out();
    assertEquals(2, o.size());
    assertEquals(ConnectionUpdate.Type.RETRACT, o.get(0).type);
    assertEquals(external.edgeKey, o.get(0).edgeKey);
    assertEquals(external.connectionId, o.get(0).connectionId);
    ConnectionUpdate real = o.get(1);
    assertEquals(ConnectionUpdate.Type.UPSERT, real.type);
    assertEquals(external.connectionId, real.connectionId);
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", real.edgeKey);
    assertEquals(12, real.bytesClientToServer);
    assertEquals(25, real.bytesServerToClient);
  }

  @Test
  void loopbackOnOneHostPairs() throws Exception {
    in(obs(A, 1, Role.CLIENT, "127.0.0.1", 51000, "127.0.0.1", 6379, 300, 8, 9));
    in(obs(A, 2, Role.SERVER, "127.0.0.1", 6379, "127.0.0.1", 51000, 400, 9, 8));
    List<ConnectionUpdate> o = out();
    assertEquals(1, o.size());
    assertEquals("host-a/300/300000", o.get(0).client.id);
    assertEquals("host-a/400/400000", o.get(0).server.id);
  }

  @Test
  void unknownRolesUseSortedEndpointsAndAKnownRoleWins() throws Exception {
    // Both UNKNOWN: the lower endpoint (10.0.0.1:40000) is taken as client.
    in(obs(A, 11, Role.UNKNOWN, "10.0.0.1", 40000, "10.0.0.2", 80, 100, 1, 2));
    in(obs(B, 22, Role.UNKNOWN, "10.0.0.2", 80, "10.0.0.1", 40000, 200, 2, 1));
    ConnectionUpdate u = out().get(0);
    assertEquals("host-a/100/100000", u.client.id);

    // One UNKNOWN side pairs with a side that knows it is the client, even when that
    // contradicts the sorted order (here the client holds the higher endpoint).
    in(obs(A, 33, Role.UNKNOWN, "10.0.0.1", 8080, "10.0.0.9", 50000, 100, 3, 4));
    in(obs(B, 44, Role.CLIENT, "10.0.0.9", 50000, "10.0.0.1", 8080, 200, 4, 3));
    List<ConnectionUpdate> o = out();
    assertEquals(1, o.size());
    assertEquals("host-b/200/200000", o.get(0).client.id);
    assertEquals("host-a/100/100000", o.get(0).server.id);
    assertEquals(4, o.get(0).bytesClientToServer);
  }

  @Test
  void tupleReuseAfterCloseStartsANewConnection() throws Exception {
    in(client(1, 1));
    in(server(1, 1));
    ConnectionUpdate first = out().get(0);
    in(closed(client(10, 10)));
    in(closed(server(10, 10)));
    out();
    h.setProcessingTime(2 * HORIZON);
    List<ConnectionUpdate> o = out();
    assertEquals(1, o.size());
    assertEquals(ConnectionUpdate.Type.FINISHED, o.get(0).type);
    assertEquals(first.connectionId, o.get(0).connectionId);

    // Same 4-tuple, new sockets.
    Observation c2 = client(3, 3);
    c2.socketCookie = 111;
    Observation s2 = server(3, 3);
    s2.socketCookie = 222;
    in(c2);
    in(s2);
    ConnectionUpdate second = out().get(0);
    assertNotEquals(first.connectionId, second.connectionId);
    assertEquals(3, second.bytesClientToServer);
  }

  @Test
  void tupleReuseBeforeCleanupFinishesTheOldConnection() throws Exception {
    in(client(5, 5));
    in(server(5, 5));
    ConnectionUpdate first = out().get(0);
    Observation c2 = client(1, 0);
    c2.socketCookie = 999;
    in(c2);
    List<ConnectionUpdate> o = out();
    assertEquals(1, o.size());
    assertEquals(ConnectionUpdate.Type.FINISHED, o.get(0).type);
    assertEquals(first.connectionId, o.get(0).connectionId);
    // The new one waits for its own peer.
    Observation s2 = server(0, 1);
    s2.socketCookie = 888;
    in(s2);
    ConnectionUpdate second = out().get(0);
    assertNotEquals(first.connectionId, second.connectionId);
    assertEquals(1, second.bytesClientToServer);
  }

  @Test
  void closedLoneSideWaitsForALatePeerBeforeCleanup() throws Exception {
    in(closed(client(4, 4)));
    h.setProcessingTime(HORIZON);
    assertEquals(GraphNode.Kind.EXTERNAL, out().get(0).server.kind);
    in(server(4, 4));
    List<ConnectionUpdate> o = out();
    assertEquals(ConnectionUpdate.Type.RETRACT, o.get(0).type);
    // Cleanup timer fires, but the server side is still open: state is kept.
    h.setProcessingTime(10 * HORIZON);
    assertEquals(List.of(), out());
    in(closed(server(6, 4)));
    assertEquals(6, out().get(0).bytesServerToClient);
    h.setProcessingTime(20 * HORIZON);
    assertEquals(ConnectionUpdate.Type.FINISHED, out().get(0).type);
  }

  @Test
  void endOfInputReportsLoneSides() throws Exception {
    in(client(10, 20));
    h.processWatermark(Long.MAX_VALUE);
    List<ConnectionUpdate> o = out();
    assertEquals(1, o.size());
    assertEquals(GraphNode.Kind.EXTERNAL, o.get(0).server.kind);
  }

  @Test
  void processLearnedLaterMovesTheConnection() throws Exception {
    // First seen outside process context: the host's catch-all process.
    in(obs(A, 11, Role.CLIENT, "10.0.0.1", 40000, "10.0.0.2", 80, 0, 1, 0));
    in(server(0, 1));
    ConnectionUpdate u = out().get(0);
    assertEquals("host-a/0/0", u.client.id);
    assertEquals("?", u.client.comm);
    in(at(client(2, 0), 2_000_000L));
    List<ConnectionUpdate> o = out();
    assertEquals(ConnectionUpdate.Type.RETRACT, o.get(0).type);
    assertTrue(o.get(1).edgeKey.startsWith("P:host-a/100/100000>"));
  }
}
