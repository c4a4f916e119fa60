package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.system.TwoHostStack.Exchange;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.neo4j.driver.Record;

/**
 * The walking skeleton end to end: two network namespaces act as two hosts, each with its own
 * real agent; a real client in one talks to a real server in the other; the events travel through
 * a real Kafka broker and the Flink job into a real Neo4j, where the edge between the two processes
 * must carry exactly the bytes sent each way.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TwoHostsEndToEndTest {

  private TwoHostStack stack;

  @BeforeAll
  void startEverything() throws Exception {
    stack = new TwoHostStack("st", 77, Path.of("target", "system-test").toAbsolutePath());
    stack.startJob();
    stack.startAgents();
  }

  @AfterAll
  void stopEverything() {
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void edgeBetweenClientOnHostAAndServerOnHostBCarriesExactBytes() throws Exception {
    // Over the default 1 MiB snapshot threshold, so snapshots and the close must add up exactly.
    long request = 3L * 1024 * 1024 + 17;
    long response = 123_457;
    Exchange ex = exchange(7070, request, response);

    Record edge = stack.awaitEdge(ex, request, response);
    assertEquals(request, edge.get("c2s").asLong(), "bytes client -> server");
    assertEquals(response, edge.get("s2c").asLong(), "bytes server -> client");
    assertEquals(1, edge.get("connections").asLong());
    assertEquals("host-a", edge.get("clientHost").asString());
    assertEquals("host-b", edge.get("serverHost").asString());
    assertEquals("java", edge.get("clientComm").asString());
    assertTrue(edge.get("serverCmdline").asString().contains("TcpPeer server"), edge.get("serverCmdline").asString());

    // Each process runs on its own host in the graph.
    List<Record> hosts = stack.read(
        "MATCH (p:Process)-[:RUNS_ON]->(h:Host) WHERE p.hostId IN ['host-a','host-b'] AND p.pid IN $pids "
            + "RETURN p.pid AS pid, h.id AS host ORDER BY host",
        Map.of("pids", List.of(ex.clientPid(), ex.serverPid())));
    assertEquals(List.of("host-a", "host-b"), hosts.stream().map(r -> r.get("host").asString()).toList());
  }

  @Test
  void smallExchangeBetweenFreshProcessesGetsItsOwnEdge() throws Exception {
    // Fresh processes: a new edge whose totals are exactly this exchange's.
    Exchange ex = exchange(7071, 10, 20);
    Record edge = stack.awaitEdge(ex, 10, 20);
    assertEquals(10, edge.get("c2s").asLong());
    assertEquals(20, edge.get("s2c").asLong());
  }

  @Test
  void everyExampleQueryOfTheGraphModelDocRunsAndFindsTheGraph() throws Exception {
    Exchange ex = exchange(7072, 1000, 2000);
    stack.awaitEdge(ex, 1000, 2000);
    List<String> queries = GraphModelDoc.exampleQueries();
    assertTrue(queries.size() >= 4, "docs/graph-model.md lost its example queries");
    for (String q : queries) {
      assertTrue(!stack.read(q, Map.of()).isEmpty(), "no rows from the documented query:\n" + q);
    }
  }

  /** Server on host B, client on host A dialling it directly. */
  private Exchange exchange(int port, long request, long response) throws Exception {
    return stack.exchange(port, stack.net.addrB, port, request, response);
  }
}
