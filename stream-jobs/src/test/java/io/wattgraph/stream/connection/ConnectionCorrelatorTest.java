package io.wattgraph.stream.connection;

import static io.wattgraph.stream.source.Observations.at;
import static io.wattgraph.stream.source.Observations.closed;
import static io.wattgraph.stream.source.Observations.obs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.source.Observation;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The correlator in Flink's operator test harness (real keyed state and timers).
 *
 * <p>Long on purpose: the cases of one operator (pairing, horizons, retention, idle expiry, tuple
 * reuse, sampled connections), each a short harness scenario on the same setup.
 */
class ConnectionCorrelatorTest {
  static final long HORIZON = 3000;
  static final String A = "host-a";
  static final String B = "host-b";

  KeyedOneInputStreamOperatorTestHarness<String, Observation, ConnectionUpdate> h;

  @BeforeEach
  void setUp() throws Exception {
    h = harness(new ConnectionCorrelator(HORIZON));
    h.open();
    h.setProcessingTime(0);
  }

  static KeyedOneInputStreamOperatorTestHarness<String, Observation, ConnectionUpdate> harness(
      ConnectionCorrelator c) throws Exception {
    return new KeyedOneInputStreamOperatorTestHarness<>(new KeyedProcessOperator<>(c),
        new ConnectionCorrelator.ByConnection(), Types.STRING);
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

  /**
   * A new socket on an endpoint of an open connection: the tuple was reused, so the old one is over
   * (its CLOSED was lost or is still on its way). It finishes after the closed retention, as if
   * closed; an event of its own socket meanwhile still reaches it, not the new connection.
   */
  @Test
  void tupleReuseBeforeCleanupFinishesTheOldConnection() throws Exception {
    in(client(5, 5));
    in(server(5, 5));
    ConnectionUpdate first = out().get(0);
    Observation c2 = at(client(1, 0), 3_000_000_000L);
    c2.socketCookie = 999;
    in(c2);
    assertEquals(List.of(), out(), "the new one waits for its own peer");
    in(closed(server(9, 5)));
    ConnectionUpdate late = single(out());
    assertEquals(first.connectionId, late.connectionId, "the old server's CLOSED, on its own connection");
    assertEquals(9, late.bytesServerToClient);
    Observation s2 = at(server(0, 1), 3_000_000_000L);
    s2.socketCookie = 888;
    in(s2);
    ConnectionUpdate second = single(out());
    assertNotEquals(first.connectionId, second.connectionId);
    assertEquals(1, second.bytesClientToServer);
    h.setProcessingTime(2 * HORIZON);
    ConnectionUpdate f = single(out());
    assertEquals(ConnectionUpdate.Type.FINISHED, f.type);
    assertEquals(first.connectionId, f.connectionId);
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

  // Load shedding (ConnectionEvent v3 keepProbability).

  static Observation keep(Observation o, double p) {
    o.keepProbability = p;
    return o;
  }

  static ConnectionUpdate single(List<ConnectionUpdate> o) {
    assertEquals(1, o.size(), o::toString);
    return o.get(0);
  }

  @Test
  void withoutSamplingEveryConnectionWeighsOne() throws Exception {
    in(client(1, 2));
    in(server(2, 1));
    assertEquals(1.0, single(out()).weight);
    in(obs(A, 12, Role.CLIENT, "10.0.0.1", 40001, "10.0.0.9", 443, 100, 1, 1));
    h.setProcessingTime(HORIZON);
    assertEquals(1.0, single(out()).weight, "a lone end too");
  }

  /**
   * A connection counts when its client end reported it (kept with p_client), with or without the
   * server end: a pair weighs 1 / p_client, whatever the server kept.
   */
  @Test
  void aPairWeighsTheInverseOfTheClientsKeepProbability() throws Exception {
    in(keep(client(10, 20), 0.5));
    in(keep(server(20, 10), 0.25));
    ConnectionUpdate u = single(out());
    assertEquals(2.0, u.weight);
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", u.edgeKey);
    in(keep(client(30, 40), 0.5));
    assertEquals(2.0, single(out()).weight, "and keeps it");
  }

  /** The client shed it (its agent reported it only for its traffic): its bytes count, it stands for none. */
  @Test
  void aClientThatShedTheConnectionMakesItWeighNothing() throws Exception {
    in(keep(server(500, 90), 0.5));
    in(keep(client(100, 520), 0.0));
    ConnectionUpdate u = single(out());
    assertEquals(0.0, u.weight);
    assertEquals(100, u.bytesClientToServer);
    assertEquals(520, u.bytesServerToClient);
  }

  /** The server shed it but the client kept it: it counts with the client's weight. */
  @Test
  void aServerThatShedTheConnectionLeavesTheClientsWeight() throws Exception {
    in(keep(server(500, 90), 0.0));
    in(keep(client(100, 520), 0.5));
    assertEquals(2.0, single(out()).weight);
  }

  @Test
  void aLoneSampledEndTowardsAnUnmonitoredPeerWeighsTheInverseOfItsProbability() throws Exception {
    in(keep(client(10, 20), 0.2));
    h.setProcessingTime(HORIZON);
    ConnectionUpdate u = single(out());
    assertEquals(GraphNode.Kind.EXTERNAL, u.server.kind);
    assertEquals(5.0, u.weight);
    // A lone end that shed it: on the External edge for its bytes, standing for no connection.
    in(keep(obs(A, 12, Role.CLIENT, "10.0.0.1", 40001, "10.0.0.9", 443, 100, 7, 8), 0.0));
    h.setProcessingTime(2 * HORIZON);
    u = single(out());
    assertEquals("10.0.0.9:443", u.server.id);
    assertEquals(0.0, u.weight);
    assertEquals(7, u.bytesClientToServer);
  }

  /**
   * host-b (10.0.0.2) sheds: its end of another connection, kept with 0.25, on another port (so
   * 10.0.0.2:80 is not yet known as a server endpoint).
   */
  void hostBSheds() throws Exception {
    in(keep(obs("host-c", 5, Role.CLIENT, "10.0.0.3", 41000, "10.0.0.2", 81, 300, 1, 1), 0.25));
    in(keep(obs(B, 6, Role.SERVER, "10.0.0.2", 81, "10.0.0.3", 41000, 200, 1, 1), 0.25));
    assertEquals(4.0, single(out()).weight);
  }

  /**
   * host-a keeps everything, host-b sheds: a connection only host-a reports is one whose hash was
   * above host-b's probability. With no paired connection yet to show which process serves
   * 10.0.0.2:80 it cannot go on its edge, and as an External edge it would be a phantom node: it is
   * withheld. If host-b reports it after all (a heavy connection it shed, keepProbability 0), it pairs.
   */
  @Test
  void aLoneEndTowardsASheddingPeerIsWithheldUntilThePeerReportsIt() throws Exception {
    hostBSheds();
    in(client(10, 20));
    h.setProcessingTime(HORIZON);
    assertEquals(List.of(), out(), "withheld at the horizon");
    in(client(1000, 20));
    assertEquals(List.of(), out(), "and after");
    in(keep(server(20, 1000), 0.0));
    ConnectionUpdate u = single(out());
    assertEquals(ConnectionUpdate.Type.UPSERT, u.type);
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", u.edgeKey);
    assertEquals(1.0, u.weight, "its client kept it whole");
    assertEquals(1000, u.bytesClientToServer);
    assertEquals(20, u.bytesServerToClient);
    in(closed(client(1000, 20)));
    in(closed(keep(server(20, 1000), 0.0)));
    out();
    h.setProcessingTime(HORIZON + 2 * HORIZON);
    ConnectionUpdate f = single(out());
    assertEquals(ConnectionUpdate.Type.FINISHED, f.type);
    assertEquals(u.edgeKey, f.edgeKey);
  }

  /**
   * Under shedding a tuple is reused while its lone end still waits (the generators of the
   * benchmark reset their connections and reuse ports within seconds): a server end that begins
   * after the client end closed is a later connection, not its peer.
   */
  @Test
  void aPeerEndThatStartsAfterTheLoneEndClosedIsALaterConnection() throws Exception {
    hostBSheds();
    in(at(closed(keep(client(10, 20), 0.5)), 1_000_000_000L));
    Observation later = at(keep(server(5, 7), 0.5), 1_000_000_000L + ConnectionCorrelator.TUPLE_REUSE_SKEW_NS + 1);
    in(later);
    assertEquals(List.of(), out(), "the first connection is withheld (its peer sheds), the second waits");
    Observation laterClient = at(keep(client(7, 5), 0.5), later.eventTimeNs);
    laterClient.socketCookie = 12;
    in(laterClient);
    ConnectionUpdate u = single(out());
    assertEquals(ConnectionUpdate.Type.UPSERT, u.type);
    assertEquals(2.0, u.weight, "the later connection pairs with its own client end");
    assertEquals(7, u.bytesClientToServer);
    assertTrue(u.connectionId.endsWith("@host-b/22"), u.connectionId);
  }

  @Test
  void aPeerEndWithinTheClockSkewOfTheCloseIsStillThePeer() throws Exception {
    in(at(closed(client(10, 20)), 1_000_000_000L));
    in(at(server(20, 10), 1_000_000_000L + ConnectionCorrelator.TUPLE_REUSE_SKEW_NS));
    ConnectionUpdate u = single(out());
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", u.edgeKey);
  }

  /** Never on an edge, it leaves none behind: not at the horizon, nor when closed and forgotten. */
  @Test
  void aWithheldConnectionThatClosesLeavesNoEdge() throws Exception {
    hostBSheds();
    in(closed(client(10, 20)));
    h.setProcessingTime(HORIZON);
    h.setProcessingTime(10 * HORIZON);
    assertEquals(List.of(), out(), "no External edge, no FINISHED");
    assertEquals(1, h.numKeyedStateEntries(), "only host-b's own connection is left");
    h.processWatermark(Long.MAX_VALUE);
    assertEquals(List.of(), out());
  }

  @Test
  void aWithheldEndIsNotReportedAtEndOfInputNorWhenItsTupleIsReused() throws Exception {
    hostBSheds();
    in(client(10, 20));
    Observation reuse = client(1, 1);
    reuse.socketCookie = 12;
    in(reuse);
    assertEquals(List.of(), out(), "the first socket's connection finishes unreported");
    h.processWatermark(Long.MAX_VALUE);
    assertEquals(List.of(), out(), "input ended: the second neither");
  }

  @Test
  void aHostCountsAsSheddingForTheConfiguredMemoryOnly() throws Exception {
    h.close();
    h = harness(new ConnectionCorrelator(HORIZON, 2 * HORIZON, 3_600_000, 0, 10 * HORIZON));
    h.open();
    h.setProcessingTime(0);
    hostBSheds();
    h.setProcessingTime(8 * HORIZON);
    in(client(10, 20));
    h.setProcessingTime(9 * HORIZON);
    assertEquals(List.of(), out(), "seen shedding 9 s ago: withheld");
    Observation later = obs(A, 13, Role.CLIENT, "10.0.0.1", 40002, "10.0.0.2", 80, 100, 3, 4);
    in(later);
    h.setProcessingTime(11 * HORIZON);
    ConnectionUpdate u = single(out());
    assertEquals("E:10.0.0.2:80", u.server.qualifiedId(), "11 s ago: no longer");
  }

  @Test
  void withTheMemoryOffALoneEndTowardsASheddingPeerIsExternal() throws Exception {
    h.close();
    h = harness(new ConnectionCorrelator(HORIZON, 2 * HORIZON, 3_600_000, 0, 0));
    h.open();
    h.setProcessingTime(0);
    hostBSheds();
    in(client(10, 20));
    h.setProcessingTime(HORIZON);
    assertEquals("E:10.0.0.2:80", single(out()).server.qualifiedId());
  }

  /** The hosts seen shedding are operator state: after a restore a lone end towards one is still withheld. */
  @Test
  void theSheddingHostsSurviveARestore() throws Exception {
    hostBSheds();
    OperatorSubtaskState snapshot = h.snapshot(1, 0);
    h.close();
    h = harness(new ConnectionCorrelator(HORIZON));
    h.initializeState(snapshot);
    h.open();
    h.setProcessingTime(1000);
    in(client(10, 20));
    h.setProcessingTime(1000 + HORIZON);
    assertEquals(List.of(), out());
  }

  /**
   * The server shed a connection its client kept: the client's lone end goes on the edge of the
   * process a paired connection showed serving that endpoint, with the client's weight (a small
   * client of a heavily sampled server is counted exactly), not withheld and not External.
   */
  @Test
  void aLoneClientEndGoesOnTheEdgeOfTheProcessServingItsEndpoint() throws Exception {
    hostBSheds();
    in(client(1, 2));
    in(keep(server(2, 1), 0.25));
    assertEquals(1.0, single(out()).weight, "the pair: the client kept it whole");
    Observation lone = obs(A, 12, Role.CLIENT, "10.0.0.1", 40001, "10.0.0.2", 80, 100, 3, 4);
    in(lone);
    h.setProcessingTime(HORIZON);
    ConnectionUpdate u = single(out());
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", u.edgeKey);
    assertEquals(1.0, u.weight);
    assertEquals(3, u.bytesClientToServer);
    // The server reports it after all (a heavy one it shed): same edge, nothing moves.
    in(keep(obs(B, 23, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", 40001, 200, 4, 3), 0.0));
    u = single(out());
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", u.edgeKey);
    assertEquals(1.0, u.weight);
  }

  @Test
  void theServerEndpointsSurviveARestore() throws Exception {
    hostBSheds();
    in(client(1, 2));
    in(keep(server(2, 1), 0.25));
    out();
    OperatorSubtaskState snapshot = h.snapshot(1, 0);
    h.close();
    h = harness(new ConnectionCorrelator(HORIZON));
    h.initializeState(snapshot);
    h.open();
    h.setProcessingTime(1000);
    in(obs(A, 12, Role.CLIENT, "10.0.0.1", 40001, "10.0.0.2", 80, 100, 3, 4));
    h.setProcessingTime(1000 + HORIZON);
    assertEquals("P:host-a/100/100000>P:host-b/200/200000", single(out()).edgeKey);
  }

  /** A loopback address is no host's own: a shedding host-a does not make host-b's loopback peers shed. */
  @Test
  void loopbackPeersAreTheObservingHosts() throws Exception {
    in(keep(obs(A, 1, Role.SERVER, "127.0.0.1", 6379, "127.0.0.1", 51000, 400, 1, 1), 0.5));
    in(obs(B, 2, Role.CLIENT, "127.0.0.1", 52000, "127.0.0.1", 6379, 300, 5, 5));
    in(obs(A, 3, Role.CLIENT, "127.0.0.1", 53000, "127.0.0.1", 6379, 301, 5, 5));
    h.setProcessingTime(HORIZON);
    // host-a's two lone ends (its sampled server's too) are withheld, host-b's is External.
    ConnectionUpdate u = single(out());
    assertEquals("host-b/300/300000", u.client.id);
    assertEquals("E:127.0.0.1:6379", u.server.qualifiedId());
  }
}
