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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Record;
import org.neo4j.driver.Session;

/**
 * The walking skeleton end to end: two network namespaces act as two hosts, each with its own
 * real agent; a real client in one talks to a real server in the other; the events travel through
 * a real Kafka broker and the Flink job into a real Neo4j, where the edge between the two processes
 * must carry exactly the bytes sent each way.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TwoHostsEndToEndTest {

  private static final String TOPIC = "wattgraph.connections";
  private static final Path WORK = Path.of("target", "system-test").toAbsolutePath();

  private TwoHostNetwork net;
  private KafkaBroker kafka;
  private Neo4jServer neo4j;
  private RunningJob job;
  private AgentProcess agentA;
  private AgentProcess agentB;
  private Driver driver;

  @BeforeAll
  void startEverything() throws Exception {
    Preconditions.requireRoot();
    Path agentBin = Preconditions.agentBinary();
    Files.createDirectories(WORK);
    net = new TwoHostNetwork("st" + (ProcessHandle.current().pid() % 1000), 77);
    kafka = KafkaBroker.start(WORK.resolve("kafka-" + System.nanoTime()), 0, 0);
    kafka.createTopic(TOPIC, 2);
    neo4j = Neo4jServer.start(WORK.resolve("neo4j-" + System.nanoTime()), 0);
    driver = GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none());
    job = RunningJob.start(kafka.bootstrapServers(), TOPIC, neo4j.boltUri(), WORK.resolve("flink"));
    agentA = new AgentProcess(agentBin, "host-a", net.nsPath(net.nsA), kafka.bootstrapServers(), WORK.resolve("agents"));
    agentB = new AgentProcess(agentBin, "host-b", net.nsPath(net.nsB), kafka.bootstrapServers(), WORK.resolve("agents"));
  }

  @AfterAll
  void stopEverything() throws Exception {
    for (AutoCloseable c : new AutoCloseable[] {agentA, agentB, job, driver, neo4j, kafka, net}) {
      if (c != null) {
        try {
          c.close();
        } catch (Exception e) {
          System.err.println("teardown: " + e);
        }
      }
    }
  }

  @Test
  void edgeBetweenClientOnHostAAndServerOnHostBCarriesExactBytes() throws Exception {
    // Over the default 1 MiB snapshot threshold, so snapshots and the close must add up exactly.
    long request = 3L * 1024 * 1024 + 17;
    long response = 123_457;
    int port = 7070;
    Exchange ex = exchange(port, request, response);

    Record edge = awaitEdge(ex, request, response);
    assertEquals(request, edge.get("c2s").asLong(), "bytes client -> server");
    assertEquals(response, edge.get("s2c").asLong(), "bytes server -> client");
    assertEquals(1, edge.get("connections").asLong());
    assertEquals("host-a", edge.get("clientHost").asString());
    assertEquals("host-b", edge.get("serverHost").asString());
    assertEquals("java", edge.get("clientComm").asString());
    assertTrue(edge.get("serverCmdline").asString().contains("TcpPeer server"), edge.get("serverCmdline").asString());

    // Each process runs on its own host in the graph.
    List<Record> hosts = read(
        "MATCH (p:Process)-[:RUNS_ON]->(h:Host) WHERE p.hostId IN ['host-a','host-b'] AND p.pid IN $pids "
            + "RETURN p.pid AS pid, h.id AS host ORDER BY host",
        Map.of("pids", List.of(ex.clientPid, ex.serverPid)));
    assertEquals(List.of("host-a", "host-b"), hosts.stream().map(r -> r.get("host").asString()).toList());
  }

  @Test
  void smallExchangeBetweenFreshProcessesGetsItsOwnEdge() throws Exception {
    // Fresh processes: a new edge whose totals are exactly this exchange's.
    Exchange ex = exchange(7071, 10, 20);
    Record edge = awaitEdge(ex, 10, 20);
    assertEquals(10, edge.get("c2s").asLong());
    assertEquals(20, edge.get("s2c").asLong());
  }

  @Test
  void everyExampleQueryOfTheGraphModelDocRunsAndFindsTheGraph() throws Exception {
    Exchange ex = exchange(7072, 1000, 2000);
    awaitEdge(ex, 1000, 2000);
    List<String> queries = GraphModelDoc.exampleQueries();
    assertTrue(queries.size() >= 4, "docs/graph-model.md lost its example queries");
    for (String q : queries) {
      assertTrue(!read(q, Map.of()).isEmpty(), "no rows from the documented query:\n" + q);
    }
  }

  private record Exchange(long clientPid, long serverPid) {}

  /** Runs the server in host B and the client in host A as separate processes; both must succeed. */
  private Exchange exchange(int port, long request, long response) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    // TcpPeer needs only the JDK: a short classpath keeps the peers' command lines readable.
    String cp = Path.of(TcpPeer.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    Path ready = WORK.resolve("server-" + port + ".ready");
    Files.deleteIfExists(ready);
    Process server = new ProcessBuilder("ip", "netns", "exec", net.nsB, java, "-cp", cp,
        TcpPeer.class.getName(), "server", net.addrB, String.valueOf(port), ready.toString(),
        String.valueOf(request), String.valueOf(response)).inheritIO().start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!Files.exists(ready)) {
      assertTrue(server.isAlive(), "server exited early");
      assertTrue(System.nanoTime() < deadline, "server did not listen within 30 s");
      Thread.sleep(50);
    }
    Process client = new ProcessBuilder("ip", "netns", "exec", net.nsA, java, "-cp", cp,
        TcpPeer.class.getName(), "client", net.addrB, String.valueOf(port),
        String.valueOf(request), String.valueOf(response)).inheritIO().start();
    assertTrue(client.waitFor(60, TimeUnit.SECONDS), "client did not finish");
    assertTrue(server.waitFor(60, TimeUnit.SECONDS), "server did not finish");
    assertEquals(0, client.exitValue(), "client failed");
    assertEquals(0, server.exitValue(), "server failed");
    // `ip netns exec` execs the command, so these are the peers' own pids.
    return new Exchange(client.pid(), server.pid());
  }

  private List<Record> read(String cypher, Map<String, Object> params) {
    try (Session session = driver.session()) {
      return session.executeRead(tx -> tx.run(cypher, params).list());
    }
  }

  /** Polls Neo4j over Bolt until the edge between the two peer processes has the final totals. */
  private Record awaitEdge(Exchange ex, long request, long response) throws Exception {
    String q = "MATCH (c:Process {hostId:'host-a', pid:$cpid})-[t:TALKS_TO]->(s:Process {hostId:'host-b', pid:$spid}) "
        + "RETURN t.bytesClientToServer AS c2s, t.bytesServerToClient AS s2c, t.connections AS connections, "
        + "c.hostId AS clientHost, s.hostId AS serverHost, c.comm AS clientComm, s.cmdline AS serverCmdline";
    Map<String, Object> params = Map.of("cpid", ex.clientPid, "spid", ex.serverPid);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    Record last = null;
    while (System.nanoTime() < deadline) {
      List<Record> rows = read(q, params);
      if (!rows.isEmpty()) {
        last = rows.get(0);
        if (last.get("c2s").asLong() == request && last.get("s2c").asLong() == response) {
          return last;
        }
      }
      Thread.sleep(250);
    }
    throw new AssertionError("no edge host-a/" + ex.clientPid + " -> host-b/" + ex.serverPid
        + " with " + request + "/" + response + " bytes; last seen: " + (last == null ? "none" : last.asMap())
        + "\nagent A log:\n" + agentA.logText() + "\nagent B log:\n" + agentB.logText());
  }
}
