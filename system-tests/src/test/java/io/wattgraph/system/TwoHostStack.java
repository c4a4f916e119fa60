package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.Neo4jServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Record;
import org.neo4j.driver.Session;

/**
 * Everything a cross-host system test stands on: two namespace hosts, a real Kafka broker and
 * Neo4j, then (when the test has prepared what must precede them) the Flink job and one real agent
 * per host. Closed in reverse order of starting; a failure to close one part is printed, not thrown,
 * so the rest is still torn down.
 */
final class TwoHostStack implements AutoCloseable {
  static final String TOPIC = "wattgraph.connections";

  final Path work;
  final TwoHostNetwork net;
  final KafkaBroker kafka;
  final Neo4jServer neo4j;
  final Driver driver;
  private final Path agentBin;
  private final Teardown started = new Teardown();
  private AgentProcess agentA;
  private AgentProcess agentB;

  TwoHostStack(String tag, int subnet, Path work) throws Exception {
    Preconditions.requireRoot();
    this.agentBin = Preconditions.agentBinary();
    this.work = work;
    Files.createDirectories(work);
    try {
      net = add(new TwoHostNetwork(tag + (ProcessHandle.current().pid() % 1000), subnet));
      kafka = add(KafkaBroker.start(work.resolve("kafka-" + System.nanoTime()), 0, 0));
      kafka.createTopic(TOPIC, 2);
      neo4j = add(Neo4jServer.start(work.resolve("neo4j-" + System.nanoTime()), 0));
      driver = add(GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none()));
    } catch (Exception e) {
      close();
      throw e;
    }
  }

  private <T extends AutoCloseable> T add(T c) {
    return started.add(c);
  }

  void startJob() throws Exception {
    // A directory of this run: the job restores the newest checkpoint under it (--restore latest),
    // and one of an earlier run (its Kafka broker gone, its transactions unknown) would not do.
    add(RunningJob.start(kafka.bootstrapServers(), TOPIC, neo4j.boltUri(), work.resolve("flink-" + System.nanoTime())));
  }

  void startAgents() throws Exception {
    agentA = add(new AgentProcess(agentBin, "host-a", net.nsPath(net.nsA), kafka.bootstrapServers(), work.resolve("agents")));
    agentB = add(new AgentProcess(agentBin, "host-b", net.nsPath(net.nsB), kafka.bootstrapServers(), work.resolve("agents")));
  }

  String agentLogs() {
    return "\nagent A log:\n" + (agentA == null ? "(not started)" : agentA.logText())
        + "\nagent B log:\n" + (agentB == null ? "(not started)" : agentB.logText());
  }

  /** The two peer processes of one exchange; `ip netns exec` execs, so these are the peers' own pids. */
  record Exchange(long clientPid, long serverPid) {}

  /**
   * Runs a TcpPeer server on host B (listening on its address and {@code serverPort}) and a client on
   * host A that dials {@code dialAddr:dialPort}, as separate processes; both must succeed.
   */
  Exchange exchange(int serverPort, String dialAddr, int dialPort, long request, long response) throws Exception {
    return exchange(work, net.nsB, net.addrB, serverPort, net.nsA, dialAddr, dialPort, request, response);
  }

  /** As above, between any two network namespaces (or one): the server in {@code serverNs}, the client in {@code clientNs}. */
  static Exchange exchange(Path work, String serverNs, String serverAddr, int serverPort, String clientNs,
      String dialAddr, int dialPort, long request, long response) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    // TcpPeer needs only the JDK: a short classpath keeps the peers' command lines readable.
    String cp = Path.of(TcpPeer.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    Path ready = work.resolve("server-" + serverPort + ".ready");
    Files.deleteIfExists(ready);
    Process server = new ProcessBuilder("ip", "netns", "exec", serverNs, java, "-cp", cp,
        TcpPeer.class.getName(), "server", serverAddr, String.valueOf(serverPort), ready.toString(),
        String.valueOf(request), String.valueOf(response)).inheritIO().start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!Files.exists(ready)) {
      assertTrue(server.isAlive(), "server exited early");
      assertTrue(System.nanoTime() < deadline, "server did not listen within 30 s");
      Thread.sleep(50);
    }
    Process client = new ProcessBuilder("ip", "netns", "exec", clientNs, java, "-cp", cp,
        TcpPeer.class.getName(), "client", dialAddr, String.valueOf(dialPort),
        String.valueOf(request), String.valueOf(response)).inheritIO().start();
    assertTrue(client.waitFor(60, TimeUnit.SECONDS), "client did not finish");
    assertTrue(server.waitFor(60, TimeUnit.SECONDS), "server did not finish");
    assertEquals(0, client.exitValue(), "client failed");
    assertEquals(0, server.exitValue(), "server failed");
    return new Exchange(client.pid(), server.pid());
  }

  List<Record> read(String cypher, Map<String, Object> params) {
    try (Session session = driver.session()) {
      return session.executeRead(tx -> tx.run(cypher, params).list());
    }
  }

  /** Polls Neo4j for up to 90 s until the query's first row satisfies {@code done}; null if it never did. */
  /**
   * Polls Neo4j until the edge host-a client process -> host-b server process of {@code ex} has
   * exactly these totals; fails naming what it last saw, the whole graph and the agents' logs.
   * Columns: c2s, s2c, connections, clientHost, serverHost, clientComm, serverCmdline.
   */
  Record awaitEdge(Exchange ex, long request, long response) throws InterruptedException {
    String q = "MATCH (c:Process {hostId:'host-a', pid:$cpid})-[t:TALKS_TO]->(s:Process {hostId:'host-b', pid:$spid}) "
        + "RETURN t.bytesClientToServer AS c2s, t.bytesServerToClient AS s2c, t.connections AS connections, "
        + "c.hostId AS clientHost, s.hostId AS serverHost, c.comm AS clientComm, s.cmdline AS serverCmdline";
    Map<String, Object> params = Map.of("cpid", ex.clientPid(), "spid", ex.serverPid());
    Record edge = awaitRow(q, params, r -> r.get("c2s").asLong() == request && r.get("s2c").asLong() == response);
    if (edge == null) {
      List<Record> rows = read(q, params);
      throw new AssertionError("no edge host-a/" + ex.clientPid() + " -> host-b/" + ex.serverPid()
          + " with " + request + "/" + response + " bytes; last seen: "
          + (rows.isEmpty() ? "none" : rows.get(0).asMap()) + "; graph: "
          + read("MATCH (a)-[t:TALKS_TO]->(b) RETURN a.id AS a, b.id AS b, properties(t) AS t", Map.of())
              .stream().map(Record::asMap).toList()
          + agentLogs());
    }
    return edge;
  }

  Record awaitRow(String cypher, Map<String, Object> params, Predicate<Record> done) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (System.nanoTime() < deadline) {
      List<Record> rows = read(cypher, params);
      if (!rows.isEmpty() && done.test(rows.get(0))) {
        return rows.get(0);
      }
      Thread.sleep(250);
    }
    return null;
  }

  @Override
  public void close() {
    started.close();
  }
}
