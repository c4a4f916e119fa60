package io.wattgraph.stream.sink.neo4j;

import io.wattgraph.stream.connection.EdgeRow;
import io.wattgraph.stream.connection.GraphNode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.neo4j.driver.Driver;
import org.neo4j.driver.Session;
import org.neo4j.driver.TransactionContext;

/**
 * Writes batches of {@link EdgeRow}s to Neo4j in the model of contracts.md.
 *
 * <p>One write transaction per batch, each statement an {@code UNWIND $rows} with parameters only
 * (values are never spliced into Cypher; the labels are constants from {@link GraphNode.Kind}).
 * The driver's {@code executeWrite} retries transient failures (deadlocks, leader switches).
 */
public class ConnectionGraphWriter implements Neo4jBatchTarget<EdgeRow> {

  static final List<String> CONSTRAINTS = List.of(
      "CREATE CONSTRAINT wattgraph_host_id IF NOT EXISTS FOR (n:Host) REQUIRE n.id IS UNIQUE",
      "CREATE CONSTRAINT wattgraph_process_id IF NOT EXISTS FOR (n:Process) REQUIRE n.id IS UNIQUE",
      "CREATE CONSTRAINT wattgraph_container_id IF NOT EXISTS FOR (n:Container) REQUIRE n.id IS UNIQUE",
      "CREATE CONSTRAINT wattgraph_external_id IF NOT EXISTS FOR (n:External) REQUIRE n.id IS UNIQUE");

  private static final String MERGE_PROCESSES = """
      UNWIND $rows AS p
      MERGE (h:Host {id: p.hostId})
      MERGE (n:Process {id: p.id})
      SET n.hostId = p.hostId, n.pid = p.pid, n.startTimeNs = p.startTimeNs, n.comm = p.comm,
          n.cmdline = coalesce(p.cmdline, n.cmdline), n.cgroupId = p.cgroupId,
          n.containerId = coalesce(p.containerId, n.containerId)
      MERGE (n)-[:RUNS_ON]->(h)
      WITH n, h, p WHERE p.containerId IS NOT NULL
      MERGE (c:Container {id: p.containerId}) ON CREATE SET c.hostId = p.hostId
      MERGE (n)-[:IN_CONTAINER]->(c)
      MERGE (c)-[:RUNS_ON]->(h)
      """;

  private static final String MERGE_EXTERNALS = """
      UNWIND $rows AS x
      MERGE (e:External {id: x.id})
      SET e.address = x.address, e.port = x.port
      """;

  private static final String UPSERT_EDGES = """
      UNWIND $rows AS r
      MERGE (a:%s {id: r.clientId})
      MERGE (b:%s {id: r.serverId})
      MERGE (a)-[t:TALKS_TO]->(b)
      SET t.bytesClientToServer = r.bytesClientToServer, t.bytesServerToClient = r.bytesServerToClient,
          t.connections = r.connections, t.connectionsEstimated = r.connectionsEstimated,
          t.connectionsSampled = r.connectionsSampled, t.firstSeenNs = r.firstSeenNs, t.lastSeenNs = r.lastSeenNs
      """;

  private static final String DELETE_EDGES = """
      UNWIND $rows AS r
      MATCH (a:%s {id: r.clientId})-[t:TALKS_TO]->(b:%s {id: r.serverId})
      DELETE t
      """;

  // An External exists only because something talked to it; once its last edge moved away it goes.
  private static final String DELETE_ORPHAN_EXTERNALS = """
      UNWIND $rows AS id
      MATCH (e:External {id: id})
      WHERE NOT (e)--()
      DELETE e
      """;

  private final Driver driver;
  /**
   * Process properties this writer has already committed, by id: a process whose properties did
   * not change is not merged again (most rows of a batch share processes written before). Bounded
   * (LRU) and cleared on any failed write, so after an outage everything is written again. The edge
   * statement MERGEs its end nodes by id, so a cached process missing from the store (wiped
   * behind the job's back) still gets its edge, only without its properties until they change.
   */
  private final Map<String, Map<String, Object>> writtenProcesses =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Map<String, Object>> eldest) {
          return size() > 200_000;
        }
      };

  public ConnectionGraphWriter(Neo4jSettings settings) {
    this.driver = settings.driver();
  }

  @Override
  public String key(EdgeRow row) {
    return row.edgeKey;
  }

  @Override
  public String rowKind() {
    return "edge rows";
  }

  /** Idempotent (IF NOT EXISTS); MERGE on these keys is only race-free with the constraints. */
  @Override
  public void createConstraints() {
    createConstraints(driver, CONSTRAINTS);
  }

  /** Runs each schema statement in a write transaction of its own, all in one session. */
  static void createConstraints(Driver driver, List<String> statements) {
    try (Session session = driver.session()) {
      for (String c : statements) {
        session.executeWrite(tx -> tx.run(c).consume());
      }
    }
  }

  /** Writes one batch (at most one row per edge) in one transaction. */
  @Override
  public List<EdgeRow> write(Collection<EdgeRow> rows) {
    if (rows.isEmpty()) {
      return List.of();
    }
    Map<String, Map<String, Object>> processes = new LinkedHashMap<>();
    Map<String, Map<String, Object>> externals = new LinkedHashMap<>();
    Map<String, List<Map<String, Object>>> upserts = new LinkedHashMap<>();
    Map<String, List<Map<String, Object>>> deletes = new LinkedHashMap<>();
    Set<String> touchedExternals = new LinkedHashSet<>();
    for (EdgeRow r : rows) {
      String pair = r.client.kind + ">" + r.server.kind;
      Map<String, Object> m = new HashMap<>();
      m.put("clientId", r.client.id);
      m.put("serverId", r.server.id);
      if (r.delete) {
        deletes.computeIfAbsent(pair, k -> new ArrayList<>()).add(m);
        for (GraphNode n : List.of(r.client, r.server)) {
          if (n.kind == GraphNode.Kind.EXTERNAL) {
            touchedExternals.add(n.id);
          }
        }
        continue;
      }
      for (GraphNode n : List.of(r.client, r.server)) {
        if (n.kind == GraphNode.Kind.PROCESS) {
          Map<String, Object> params = processParams(n);
          if (!params.equals(writtenProcesses.get(n.id))) {
            processes.put(n.id, params);
          }
        } else {
          externals.put(n.id, externalParams(n));
        }
      }
      m.put("bytesClientToServer", r.bytesClientToServer);
      m.put("bytesServerToClient", r.bytesServerToClient);
      m.put("connections", r.connections);
      m.put("connectionsEstimated", r.connectionsEstimated);
      m.put("connectionsSampled", r.connectionsSampled);
      m.put("firstSeenNs", r.firstSeenNs);
      m.put("lastSeenNs", r.lastSeenNs);
      upserts.computeIfAbsent(pair, k -> new ArrayList<>()).add(m);
    }
    try (Session session = driver.session()) {
      session.executeWrite(tx -> {
        run(tx, MERGE_PROCESSES, new ArrayList<>(processes.values()));
        run(tx, MERGE_EXTERNALS, new ArrayList<>(externals.values()));
        for (Map.Entry<String, List<Map<String, Object>>> e : upserts.entrySet()) {
          run(tx, withLabels(UPSERT_EDGES, e.getKey()), e.getValue());
        }
        for (Map.Entry<String, List<Map<String, Object>>> e : deletes.entrySet()) {
          run(tx, withLabels(DELETE_EDGES, e.getKey()), e.getValue());
        }
        run(tx, DELETE_ORPHAN_EXTERNALS, new ArrayList<>(touchedExternals));
        return null;
      });
    } catch (RuntimeException e) {
      writtenProcesses.clear();
      throw e;
    }
    writtenProcesses.putAll(processes);
    return List.of();
  }

  /** Runs one {@code UNWIND $rows} statement, unless there are no rows. */
  static void run(TransactionContext tx, String cypher, List<?> rows) {
    if (!rows.isEmpty()) {
      tx.run(cypher, Map.of("rows", rows)).consume();
    }
  }

  /** Fills the label placeholders from the enum pair "PROCESS>EXTERNAL": never from data. */
  private static String withLabels(String template, String pair) {
    String[] kinds = pair.split(">");
    return template.formatted(label(GraphNode.Kind.valueOf(kinds[0])), label(GraphNode.Kind.valueOf(kinds[1])));
  }

  private static String label(GraphNode.Kind kind) {
    return switch (kind) {
      case PROCESS -> "Process";
      case EXTERNAL -> "External";
    };
  }

  private static Map<String, Object> processParams(GraphNode n) {
    Map<String, Object> m = new HashMap<>();
    m.put("id", n.id);
    m.put("hostId", n.hostId);
    m.put("pid", n.pid);
    m.put("startTimeNs", n.startTimeNs);
    m.put("comm", n.comm);
    m.put("cmdline", n.cmdline);
    m.put("cgroupId", n.cgroupId);
    m.put("containerId", n.containerId);
    return m;
  }

  private static Map<String, Object> externalParams(GraphNode n) {
    Map<String, Object> m = new HashMap<>();
    m.put("id", n.id);
    m.put("address", n.address);
    m.put("port", n.port);
    return m;
  }

  @Override
  public void close() {
    driver.close();
  }
}
