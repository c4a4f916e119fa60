package io.wattgraph.stream.connection;

import static io.wattgraph.stream.source.Observations.at;
import static io.wattgraph.stream.source.Observations.closed;
import static io.wattgraph.stream.source.Observations.obs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.source.Observation;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OperatorSnapshotUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The two ends of a connection reaching the correlator far apart: agents spool while Kafka (or
 * their way to it) is down and deliver in bursts later, each host in its own order. Correlator and
 * edge aggregator in Flink's harness with the job's default settings (horizon 3 s, closed retention
 * 6 s, memory 5 min); the graph is the aggregator's latest row per edge.
 */
class LateEndsTest {
  static final long HORIZON = 3000;
  static final long MEMORY = 300_000;
  /** Event time of the broker's death: a realistic wall clock, ns. */
  static final long T0 = 1_800_000_000_000_000_000L;
  static final long MS = 1_000_000L;

  KeyedOneInputStreamOperatorTestHarness<String, Observation, ConnectionUpdate> h;
  KeyedOneInputStreamOperatorTestHarness<String, ConnectionUpdate, EdgeRow> edges;
  /** Edge key to its latest row; deleted edges removed. */
  final Map<String, EdgeRow> graph = new TreeMap<>();

  @BeforeEach
  void setUp() throws Exception {
    start(new ConnectionCorrelator(HORIZON, 2 * HORIZON, 3_600_000, MEMORY));
    edges = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionsPerEdge()), new ConnectionsPerEdge.ByEdge(), Types.STRING);
    edges.open();
  }

  void start(ConnectionCorrelator c) throws Exception {
    h = new KeyedOneInputStreamOperatorTestHarness<>(new KeyedProcessOperator<>(c),
        new ConnectionCorrelator.ByConnection(), Types.STRING);
    h.open();
    h.setProcessingTime(0);
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
    edges.close();
  }

  /** Processing time moves on; what the correlator emitted goes through the aggregator into the graph. */
  void clock(long processingMs) throws Exception {
    h.setProcessingTime(processingMs);
    drain();
  }

  void in(Observation o) throws Exception {
    h.processElement(o, 0);
    drain();
  }

  void drain() throws Exception {
    List<ConnectionUpdate> r = h.extractOutputValues();
    h.getOutput().clear();
    for (ConnectionUpdate u : r) {
      edges.processElement(u, 0);
    }
    for (EdgeRow row : edges.extractOutputValues()) {
      if (row.delete) {
        graph.remove(row.edgeKey);
      } else {
        graph.put(row.edgeKey, row);
      }
    }
    edges.getOutput().clear();
  }

  static final String REAL = "P:host-a/100/100000>P:host-b/200/200000";

  /** host-a's client end of the connection on client port {@code port}: OPENED at {@code t}, CLOSED 2 ms later. */
  static List<Observation> clientEnd(long cookie, int port, long t, long sent, long received) {
    return List.of(
        at(obs("host-a", cookie, Role.CLIENT, "10.0.0.1", port, "10.0.0.2", 80, 100, 0, 0), t),
        at(closed(obs("host-a", cookie, Role.CLIENT, "10.0.0.1", port, "10.0.0.2", 80, 100, sent, received)), t + 2 * MS));
  }

  static List<Observation> serverEnd(long cookie, int port, long t, long sent, long received) {
    return List.of(
        at(obs("host-b", cookie, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", port, 200, 0, 0), t + MS / 10),
        at(closed(obs("host-b", cookie, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", port, 200, sent, received)), t + 2 * MS));
  }

  void in(List<Observation> end) throws Exception {
    for (Observation o : end) {
      in(o);
    }
  }

  /** A connection both agents delivered live before the broker died: it shows which process serves 10.0.0.2:80. */
  void pairedBeforeTheOutage() throws Exception {
    in(clientEnd(1, 30000, T0 - 1000 * MS, 10, 20));
    in(serverEnd(2, 30000, T0 - 1000 * MS, 20, 10));
  }

  /**
   * A broker outage as it happened: host-b's agent had both events of a connection acknowledged just before the
   * broker was killed, host-a's were still in flight and went to its spool. 57 s later the broker is
   * back and host-a's spool delivers the client end. Before: the server end became an External
   * client at the horizon, was forgotten after the closed retention, and the client end, a new
   * connection for the correlator, went onto the real edge too: counted twice.
   */
  @Test
  void aServerEndDeliveredBeforeTheBrokerDiedAndItsClientEndAMinuteLaterCountOnce() throws Exception {
    oneEndNowTheOtherAMinuteLater(serverEnd(22, 40000, T0, 700, 300), clientEnd(11, 40000, T0, 300, 700));
  }

  /** The other order: the client end was delivered (and put on its server's edge), the server end spooled. */
  @Test
  void aClientEndDeliveredBeforeTheBrokerDiedAndItsServerEndAMinuteLaterCountOnce() throws Exception {
    oneEndNowTheOtherAMinuteLater(clientEnd(11, 40000, T0, 300, 700), serverEnd(22, 40000, T0, 700, 300));
  }

  void oneEndNowTheOtherAMinuteLater(List<Observation> delivered, List<Observation> spooled) throws Exception {
    pairedBeforeTheOutage();
    in(delivered);
    clock(HORIZON);
    assertEquals(2, graph.values().stream().mapToLong(r -> r.connections).sum(),
        "the lone end on an edge at the horizon (a server end: External client; a client end: its server's edge)");
    clock(57_000);
    in(spooled);
    clock(57_000 + 10 * HORIZON);
    assertExactly(2, 10 + 300, 20 + 700);
  }

  /**
   * At 600 connections/s the client reuses its ephemeral ports within the outage: the connection
   * whose server end was delivered before the broker died and a later one on the same 4-tuple, both
   * of whose ends were spooled, reach the correlator in either agent's order after the restart.
   */
  @Test
  void aTupleReusedDuringTheOutageStillPairsEachEndWithItsOwnPeer() throws Exception {
    for (boolean serverBurstFirst : new boolean[] {true, false}) {
      tearDown();
      graph.clear();
      setUp();
      pairedBeforeTheOutage();
      in(serverEnd(22, 40000, T0, 700, 300));
      clock(HORIZON);
      clock(57_000);
      List<Observation> hostA = new ArrayList<>(clientEnd(11, 40000, T0, 300, 700));
      hostA.addAll(clientEnd(12, 40000, T0 + 30_000 * MS, 5, 6));
      List<Observation> hostB = serverEnd(23, 40000, T0 + 30_000 * MS, 6, 5);
      in(serverBurstFirst ? hostB : hostA);
      clock(57_500);
      in(serverBurstFirst ? hostA : hostB);
      clock(57_500 + 10 * HORIZON);
      assertExactly(3, 10 + 300 + 5, 20 + 700 + 6);
    }
  }

  /**
   * Neo4j down, the job backpressured, or the job itself down: processing time passes but no input
   * does. The memory is measured in the input's own event time as well, so the lone end is still
   * there when its peer comes, however long the stall.
   */
  @Test
  void aStalledInputForgetsNothing() throws Exception {
    pairedBeforeTheOutage();
    in(serverEnd(22, 40000, T0, 700, 300));
    clock(HORIZON);
    clock(3 * MEMORY);
    in(clientEnd(11, 40000, T0, 300, 700));
    clock(3 * MEMORY + 10 * HORIZON);
    assertExactly(2, 10 + 300, 20 + 700);
  }

  /**
   * The bound: once the other hosts' events are {@code MEMORY} past the lone end and that much
   * processing time went by, it is forgotten (finished on its External edge, the key cleared). An end
   * of it arriving later is counted as a new connection, and counted in {@code latePeersPastMemory}:
   * never a silent double count.
   */
  @Test
  void anEndLaterThanTheMemoryIsCountedAsSuch() throws Exception {
    long before = ConnectionCorrelator.LATE_PAST_MEMORY.get();
    pairedBeforeTheOutage();
    in(serverEnd(22, 40000, T0, 700, 300));
    clock(HORIZON);
    // Other hosts go on for longer than the memory.
    for (long s = 0; s <= MEMORY / 1000 + 60; s += 30) {
      clock(HORIZON + s * 1000);
      in(clientEnd(1000 + s, 50000, T0 + s * 1000 * MS, 1, 1).stream()
          .map(o -> { o.hostId = "host-c"; o.localIp = "10.0.0.3"; return o; }).toList());
    }
    clock(HORIZON + MEMORY + 200_000);
    assertEquals(ConnectionCorrelator.LATE_PAST_MEMORY.get(), before, "nothing late yet");
    in(clientEnd(11, 40000, T0, 300, 700));
    clock(HORIZON + MEMORY + 300_000);
    assertEquals(before + 1, ConnectionCorrelator.LATE_PAST_MEMORY.get(), "the late end is counted as such");
    assertEquals(1, graph.get("E:10.0.0.1>P:host-b/200/200000").connections, "its server end stays where it was");
  }

  /** The input's progress is operator state: after a restore the memory's clock goes on from where it was. */
  @Test
  void theInputsProgressSurvivesARestore() throws Exception {
    long before = ConnectionCorrelator.LATE_PAST_MEMORY.get();
    in(clientEnd(1, 50000, T0 + 2 * MEMORY * MS, 1, 1).stream()
        .map(o -> { o.hostId = "host-c"; o.localIp = "10.0.0.3"; return o; }).toList());
    OperatorSubtaskState snapshot = h.snapshot(1, 0);
    h.close();
    h = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionCorrelator(HORIZON, 2 * HORIZON, 3_600_000, MEMORY)),
        new ConnectionCorrelator.ByConnection(), Types.STRING);
    h.initializeState(snapshot);
    h.open();
    h.setProcessingTime(0);
    in(clientEnd(11, 40000, T0, 300, 700));
    assertEquals(before + 1, ConnectionCorrelator.LATE_PAST_MEMORY.get(), "an end older than the memory, by the restored progress");
  }

  /**
   * A checkpoint of the build before (94f229e, {@code state/correlator-94f229e.snapshot}, written by
   * its own correlator in this harness at processing time 9 s): a lone server end on its External
   * edge with its cleanup pending, and a closed pair's tombstone. Restored here, the lone end is kept
   * past the cleanup and its late client end moves it to the real edge; the tombstone still drops a
   * replay and goes at its old deadline.
   */
  @Test
  void stateOfTheBuildBeforeRestoresAndTheLoneEndWaitsForItsPeer() throws Exception {
    h.close();
    h = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new ConnectionCorrelator(HORIZON, 2 * HORIZON, 3_600_000, MEMORY)),
        new ConnectionCorrelator.ByConnection(), Types.STRING);
    h.initializeState(OperatorSnapshotUtil.readStateHandle(
        getClass().getResource("/state/correlator-94f229e.snapshot").getPath()));
    h.open();
    h.setProcessingTime(9000);
    h.setProcessingTime(15_000);
    assertEquals(List.of(), h.extractOutputValues(), "the cleanup finishes nothing: the lone end is remembered");
    h.setProcessingTime(60_000);
    h.processElement(at(obs("host-a", 11, Role.CLIENT, "10.0.0.1", 40000, "10.0.0.2", 80, 100, 0, 0), T0), 0);
    List<ConnectionUpdate> o = h.extractOutputValues();
    h.getOutput().clear();
    assertEquals(2, o.size(), o.toString());
    assertEquals(ConnectionUpdate.Type.RETRACT, o.get(0).type);
    assertEquals("E:10.0.0.1>P:host-b/200/200000", o.get(0).edgeKey);
    assertEquals(REAL, o.get(1).edgeKey);
    assertEquals(o.get(0).connectionId, o.get(1).connectionId);
    assertEquals(700, o.get(1).bytesServerToClient);

    long dropped = ConnectionCorrelator.DUPLICATES_DROPPED.get();
    h.processElement(at(closed(obs("host-a", 1, Role.CLIENT, "10.0.0.1", 30000, "10.0.0.2", 80, 100, 10, 20)), T0), 0);
    assertEquals(List.of(), h.extractOutputValues(), "the old tombstone drops the replay");
    assertEquals(dropped + 1, ConnectionCorrelator.DUPLICATES_DROPPED.get());
    h.setProcessingTime(6000 + MEMORY);
    assertEquals(1, h.numKeyedStateEntries(), "the old tombstone is gone at its deadline, the pair is left");
  }

  /**
   * Any arrival order and delay the spools allow (within the memory): two agents whose clocks differ
   * by up to 0.3 s, a client reusing 12 ports for 600 connections (a 4-tuple comes back every 2.4 s),
   * outages of either agent or of both (then each agent's burst after its own reconnection delay),
   * each host's events in its own order. Every connection once, on its real edge, with its bytes.
   */
  @Test
  void anyArrivalOrderAndDelayWithinTheMemoryCountsEachConnectionOnceOnItsEdge() throws Exception {
    for (int seed = 1; seed <= 40; seed++) {
      tearDown();
      graph.clear();
      setUp();
      Random r = new Random(seed);
      int n = 600;
      long skewB = (r.nextInt(601) - 300) * MS;
      List<Delivery> deliveries = new ArrayList<>();
      long[] outageA = outage(r);
      long[] outageB = r.nextInt(3) == 0 ? outageA.clone() : outage(r);
      if (outageB[0] == outageA[0]) {
        outageA[1] += r.nextInt(20_000); // both agents cut off: each reconnects after its own backoff
        outageB[1] += r.nextInt(20_000);
      }
      long sumC2s = 0;
      long sumS2c = 0;
      for (int i = 0; i < n; i++) {
        long startMs = 1000 + i * 200L;
        long t = T0 + startMs * MS;
        int port = 40000 + i % 12;
        long c2s = 1 + r.nextInt(1000);
        long s2c = 1 + r.nextInt(1000);
        sumC2s += c2s;
        sumS2c += s2c;
        for (Observation o : clientEnd(10_000 + i, port, t, c2s, s2c)) {
          deliveries.add(new Delivery(deliveredAt(o, outageA, r), 0, o));
        }
        for (Observation o : serverEnd(20_000 + i, port, t, s2c, c2s)) {
          o.eventTimeNs += skewB;
          deliveries.add(new Delivery(deliveredAt(o, outageB, r), 1, o));
        }
      }
      // Each agent's events in its own order (a spool keeps it): delivery times monotone per host.
      long[] last = new long[2];
      for (Delivery d : deliveries) {
        d.atMs = Math.max(d.atMs, last[d.host]);
        last[d.host] = d.atMs;
      }
      deliveries.sort(Comparator.comparingLong((Delivery d) -> d.atMs));
      for (Delivery d : deliveries) {
        if (d.atMs > h.getProcessingTime()) {
          clock(d.atMs);
        }
        in(d.o);
      }
      clock(h.getProcessingTime() + 10 * HORIZON);
      assertEquals(List.of(REAL), List.copyOf(graph.keySet()), "seed " + seed + ": " + graph.values());
      EdgeRow row = graph.get(REAL);
      assertEquals(n, row.connections, "seed " + seed);
      assertEquals(sumC2s, row.bytesClientToServer, "seed " + seed);
      assertEquals(sumS2c, row.bytesServerToClient, "seed " + seed);
    }
  }

  /** One event and when it reaches the correlator (ms of processing time). */
  static final class Delivery {
    long atMs;
    final int host;
    final Observation o;

    Delivery(long atMs, int host, Observation o) {
      this.atMs = atMs;
      this.host = host;
      this.o = o;
    }
  }

  /** [from, to) in ms after the first connection, within the load's 120 s: nothing of that host is delivered meanwhile. */
  static long[] outage(Random r) {
    long from = r.nextInt(100_000);
    return new long[] {from, from + 5_000 + r.nextInt(60_000)};
  }

  /** When the agent's event reaches the correlator: a few ms after it happened, or in the burst after its outage. */
  static long deliveredAt(Observation o, long[] outage, Random r) {
    long ms = (o.eventTimeNs - T0) / MS;
    long lag = 1 + r.nextInt(30);
    return ms >= outage[0] && ms < outage[1] ? outage[1] + (ms - outage[0]) / 20 + lag : ms + lag;
  }

  void assertExactly(long connections, long c2s, long s2c) {
    assertEquals(List.of(REAL), List.copyOf(graph.keySet()), "no External edge: " + graph.values());
    EdgeRow row = graph.get(REAL);
    assertEquals(connections, row.connections, row.toString());
    assertEquals(c2s, row.bytesClientToServer, row.toString());
    assertEquals(s2c, row.bytesServerToClient, row.toString());
  }
}
