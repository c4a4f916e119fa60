package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionRole;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.connection.ConnectionCorrelator;
import io.wattgraph.stream.sink.kafka.DeadLetterSerializer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.Record;

/**
 * The whole job against a real Kafka broker and a real Neo4j (local-stack), run in a MiniCluster
 * in bounded mode (stops at the offsets that were latest at start), then checked over Bolt.
 *
 * <p>Long on purpose: one real Kafka broker and Neo4j per class (their start is most of a test's
 * time), so the whole-job cases share the class.
 */
public class CorrelationJobIT {
  static final String TOPIC = "wattgraph.connections";
  static final String CURL = "host-a/1001/5000";
  static final String NGINX = "host-b/2002/6000";
  static final String REDIS = "host-b/2003/7000";
  /** Sockets of host-b never seen in process context (contracts.md). */
  static final String UNKNOWN_B = "host-b/0/0";

  static StreamJobHarness stack;

  @BeforeAll
  static void startStack() throws Exception {
    stack = StreamJobHarness.start("correlation");
    stack.kafka.createTopic(TOPIC, 2);
    stack.kafka.createTopic(DLQ, 1);
  }

  @AfterAll
  static void stopStack() {
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void buildsTheGraphAndAReplayLeavesItIdentical() throws Exception {
    produceScenario();

    runBounded("it-run-1");

    for (String id : List.of(CURL, NGINX, REDIS, UNKNOWN_B)) {
      assertEquals(1, count("MATCH (p:Process {id: $a}) RETURN count(p)", id, null), id);
    }
    assertEquals(4, count("MATCH (p:Process) WHERE p.hostId IN ['host-a', 'host-b'] RETURN count(p)", null, null), () -> String.join("\n", dump()));
    assertEquals(1, count("MATCH (:Process {id: $a})-[:RUNS_ON]->(:Host {id: 'host-a'}) RETURN count(*)", CURL, null));
    assertEquals(1, count("MATCH (:Process {id: $a})-[:RUNS_ON]->(:Host {id: 'host-b'}) RETURN count(*)", NGINX, null));
    Record curl = single("MATCH (p:Process {id: $a}) RETURN p", CURL, null);
    assertEquals("curl", curl.get("p").get("comm").asString());
    assertEquals("curl http://10.1.0.2:8080/", curl.get("p").get("cmdline").asString());
    assertEquals(1001, curl.get("p").get("pid").asInt());
    assertEquals(5000, curl.get("p").get("startTimeNs").asLong());

    // Two connections curl -> nginx, each byte total the max of the two ends' counters.
    Record e = talksTo(CURL, NGINX);
    assertEquals(1200 + 300, e.get("c2s").asLong());
    assertEquals(6100 + 700, e.get("s2c").asLong());
    assertEquals(2, e.get("n").asLong());
    assertEquals(1_000, e.get("first").asLong());
    assertEquals(9_000, e.get("last").asLong());

    // One-sided connection to the outside world: the server end is an External ip:port.
    Record x = single("MATCH (:Process {id: $a})-[t:TALKS_TO]->(x:External) "
        + "RETURN x.id AS id, x.address AS address, x.port AS port, t.bytesClientToServer AS c2s, "
        + "t.bytesServerToClient AS s2c, t.connections AS n", CURL, null);
    assertEquals("93.184.216.34:443", x.get("id").asString());
    assertEquals("93.184.216.34", x.get("address").asString());
    assertEquals(443, x.get("port").asInt());
    assertEquals(50, x.get("c2s").asLong());
    assertEquals(4000, x.get("s2c").asLong());
    assertEquals(1, x.get("n").asLong());

    // Outside client of a host-b socket never seen in process context: an External ip without
    // port (its ephemeral port would make a node per connection) -> host-b's catch-all process.
    Record y = single("MATCH (x:External)-[t:TALKS_TO]->(p:Process {id: $a}) RETURN x.id AS id, x.port AS port, "
        + "t.bytesClientToServer AS c2s, p.comm AS comm", UNKNOWN_B, null);
    assertEquals("?", y.get("comm").asString());
    assertEquals("198.51.100.7", y.get("id").asString());
    assertTrue(y.get("port").isNull());
    assertEquals(77, y.get("c2s").asLong());

    // Loopback inside host-b, the server in a container.
    Record l = talksTo(NGINX, REDIS);
    assertEquals(64, l.get("c2s").asLong());
    assertEquals(128, l.get("s2c").asLong());
    assertEquals(1, count("MATCH (:Process {id: $a})-[:IN_CONTAINER]->(c:Container {id: 'c0ffee'})"
        + "-[:RUNS_ON]->(:Host {id: 'host-b'}) WHERE c.hostId = 'host-b' RETURN count(*)", REDIS, null));

    assertEquals(4, count("MATCH (a)-[t:TALKS_TO]->(b) WHERE a.hostId IN ['host-a', 'host-b'] "
        + "OR b.hostId IN ['host-a', 'host-b'] RETURN count(t)", null, null));

    // The three poison records are in the dead-letter topic, unchanged, with reason and origin.
    List<ConsumerRecord<byte[], byte[]>> dead = readDeadLetters();
    assertEquals(3, dead.size(), () -> dead.toString());
    List<byte[]> poison = poison();
    dead.sort(Comparator.comparingLong(r -> Long.parseLong(StreamJobHarness.header(r, DeadLetterSerializer.OFFSET))));
    for (int i = 0; i < 3; i++) {
      ConsumerRecord<byte[], byte[]> r = dead.get(i);
      assertArrayEquals(poison.get(i), r.value());
      assertEquals("garbage", new String(r.key(), StandardCharsets.UTF_8));
      assertEquals(TOPIC, StreamJobHarness.header(r, DeadLetterSerializer.TOPIC));
      assertTrue(Integer.parseInt(StreamJobHarness.header(r, DeadLetterSerializer.PARTITION)) >= 0);
    }
    assertTrue(StreamJobHarness.header(dead.get(0), DeadLetterSerializer.REASON).startsWith("undecodable: "));
    assertTrue(StreamJobHarness.header(dead.get(1), DeadLetterSerializer.REASON).contains("MissingSchemaException"));
    assertEquals("invalid: remotePort 70000 out of range 0..65535", StreamJobHarness.header(dead.get(2), DeadLetterSerializer.REASON));

    // Replay: a new consumer group reads everything again into the existing graph.
    List<String> before = dump();
    runBounded("it-run-2");
    assertEquals(before, dump());
  }

  /**
   * Live (unbounded) run: a lone client side shows up against an External after the pairing
   * horizon; when the server's agent reports later, the connection moves to the real edge and the
   * External edge and node disappear.
   */
  @Test
  void latePeerMovesTheConnectionInALiveRun() throws Exception {
    String topic = "wattgraph.connections.live";
    stack.kafka.createTopic(topic, 1);
    JobConfig c = stack.config("it-live");
    c.topic = topic;
    c.parallelism = 1;
    c.pairingHorizonMs = 500;
    c.checkpointIntervalMs = 500;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    JobClient job = env.executeAsync("correlation-it-live");
    try {
      String client = "host-c/3001/5000";
      String server = "host-d/4001/6000";
      ConnectionEvent lone = event("host-c", 3001, "java", null, null, ConnectionEventKind.SNAPSHOT,
          ConnectionRole.CLIENT, "10.2.0.1", 41000, "10.2.0.2", 9000, 1_000, 10, 20, 31);
      lone.setProcessStartTimeNs(5000);
      send(topic, lone);
      await(() -> count("MATCH (:Process {id: $a})-[t:TALKS_TO {connections: 1}]->(:External {id: $b}) "
          + "RETURN count(t)", client, "10.2.0.2:9000") == 1, "lone client against External 10.2.0.2:9000");

      ConnectionEvent peer = event("host-d", 4001, "java", null, null, ConnectionEventKind.SNAPSHOT,
          ConnectionRole.SERVER, "10.2.0.2", 9000, "10.2.0.1", 41000, 2_000, 25, 12, 41);
      peer.setProcessStartTimeNs(6000);
      send(topic, peer);
      await(() -> count("MATCH (:Process {id: $a})-[t:TALKS_TO {bytesClientToServer: 12, "
          + "bytesServerToClient: 25, connections: 1}]->(:Process {id: $b}) RETURN count(t)", client, server) == 1,
          "connection on the real edge");
      await(() -> count("MATCH (x:External {id: $a}) RETURN count(x)", "10.2.0.2:9000", null) == 0,
          "External edge and node gone");
      assertEquals(1, count("MATCH (:Process {id: $a})-[t:TALKS_TO]->() RETURN count(t)", client, null));

      // Both ends close; past the closed retention (2 x 500 ms) the job forgets the connection but
      // keeps its sockets: host-c's agent crashes and its spool replays all of its events.
      ConnectionEvent closedClient = event("host-c", 3001, "java", null, null, ConnectionEventKind.CLOSED,
          ConnectionRole.CLIENT, "10.2.0.1", 41000, "10.2.0.2", 9000, 3_000, 12, 25, 31);
      closedClient.setProcessStartTimeNs(5000);
      ConnectionEvent closedServer = event("host-d", 4001, "java", null, null, ConnectionEventKind.CLOSED,
          ConnectionRole.SERVER, "10.2.0.2", 9000, "10.2.0.1", 41000, 3_000, 25, 12, 41);
      closedServer.setProcessStartTimeNs(6000);
      send(topic, closedClient);
      send(topic, closedServer);
      Thread.sleep(3000);
      long droppedBefore = ConnectionCorrelator.DUPLICATES_DROPPED.get();
      send(topic, lone);
      send(topic, closedClient);
      // Then a connection of other hosts, so that the replay has been processed once it shows.
      ConnectionEvent next = event("host-e", 5001, "java", null, null, ConnectionEventKind.SNAPSHOT,
          ConnectionRole.CLIENT, "10.2.0.5", 42000, "10.2.0.6", 9000, 4_000, 1, 1, 51);
      send(topic, next);
      await(() -> count("MATCH (p:Process {hostId: $a})-[t:TALKS_TO]->() RETURN count(t)", "host-e", null) == 1,
          "the connection after the replay");
      assertEquals(2, ConnectionCorrelator.DUPLICATES_DROPPED.get() - droppedBefore, "the replay met the tombstone");
      assertEquals(1, count("MATCH (:Process {id: $a})-[t:TALKS_TO {bytesClientToServer: 12, "
          + "bytesServerToClient: 25, connections: 1}]->(:Process {id: $b}) RETURN count(t)", client, server),
          "the replayed connection is not counted again");
      // Without the tombstone the replay would be a new lone client, against an External server
      // (its pairing horizon ran out before the later connection's).
      assertEquals(1, count("MATCH (:Process {id: $a})-[t:TALKS_TO]->() RETURN count(t)", client, null),
          "and no phantom edge");
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /**
   * Live run with load shedding (ConnectionEvent v3 keepProbability): host-f keeps half of its
   * connections, host-g a quarter or half. Every connection host-f's end reported counts 1 / 0.5:
   * two pairs; two only host-f reported, put on host-g's edge because the pairs showed which
   * process serves 10.4.0.2:9000 (one of them later reported by host-g for its bytes, which shed
   * it: keepProbability 0); one to a port of host-g no pair showed (withheld: no External edge);
   * one to an outside address (External, 1 / 0.5); an unsampled pair of other hosts beside them.
   */
  @Test
  void sampledConnectionsAreEstimatedOnTheirEdgesInALiveRun() throws Exception {
    String topic = "wattgraph.connections.sampled";
    stack.kafka.createTopic(topic, 1);
    JobConfig c = stack.config("it-sampled");
    c.topic = topic;
    c.parallelism = 1;
    c.pairingHorizonMs = 500;
    c.checkpointIntervalMs = 500;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    JobClient job = env.executeAsync("correlation-it-sampled");
    try {
      String client = "host-f/3201/5000";
      String server = "host-g/4201/6000";
      long withheldBefore = ConnectionCorrelator.WITHHELD_BY_SHEDDING_PEER.get();
      send(topic, sampledClient(43001, 100, 10, 0.5));
      send(topic, sampledServer(43001, 100, 10, 0.25));
      send(topic, sampledClient(43002, 200, 20, 0.5));
      send(topic, sampledServer(43002, 200, 20, 0.5));
      // host-g's hash said no: only host-f has these. 10.4.0.2:9000 is known (the pairs): its edge.
      send(topic, sampledClient(43003, 300, 30, 0.5));
      send(topic, sampledClient(43004, 9000, 40, 0.5));
      // A port of host-g no pair has shown: withheld (no phantom External).
      ConnectionEvent unknownPort = sampledClient(43006, 600, 60, 0.5);
      unknownPort.setRemotePort(9001);
      send(topic, unknownPort);
      await(() -> ConnectionCorrelator.WITHHELD_BY_SHEDDING_PEER.get() - withheldBefore == 1,
          "43006 withheld at its horizon");
      send(topic, sampledServer(43004, 9000, 40, 0.0)); // heavy: host-g reports it although it shed it
      ConnectionEvent outside = event("host-f", 3201, "java", null, null, ConnectionEventKind.SNAPSHOT,
          ConnectionRole.CLIENT, "10.4.0.1", 43005, "93.184.216.34", 443, 1_000, 5, 50, 35);
      outside.setProcessStartTimeNs(5000);
      outside.setKeepProbability(0.5);
      send(topic, outside);
      ConnectionEvent plainClient = event("host-h", 3301, "java", null, null, ConnectionEventKind.SNAPSHOT,
          ConnectionRole.CLIENT, "10.4.0.3", 44001, "10.4.0.4", 9000, 1_000, 7, 70, 36);
      ConnectionEvent plainServer = event("host-i", 4301, "java", null, null, ConnectionEventKind.SNAPSHOT,
          ConnectionRole.SERVER, "10.4.0.4", 9000, "10.4.0.3", 44001, 1_000, 70, 7, 46);
      send(topic, plainClient);
      send(topic, plainServer);

      String external = "MATCH (:Process {id: $a})-[t:TALKS_TO]->(:External {id: $b}) RETURN count(t)";
      // The outside connection's horizon passes after those of 43003, 43004 and 43006.
      await(() -> count(external, client, "93.184.216.34:443") == 1, "the outside connection on its External edge");
      await(() -> count("MATCH (:Process {id: $a})-[t:TALKS_TO {connections: 4}]->(:Process {id: $b}) "
          + "RETURN count(t)", client, server) == 1, "four connections host-f -> host-g");
      Record e = single("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) RETURN t.connections AS n, "
          + "t.connectionsEstimated AS est, t.connectionsSampled AS sampled, t.bytesClientToServer AS c2s", client, server);
      assertEquals(4, e.get("n").asLong());
      assertEquals(4 * 2.0, e.get("est").asDouble(), "each counted by its client end, kept with 0.5");
      assertEquals(4, e.get("sampled").asLong());
      assertEquals(100 + 200 + 300 + 9000, e.get("c2s").asLong(), "the lone ends' and the shed one's bytes count");
      assertEquals(0, count("MATCH (x:External) WHERE x.id STARTS WITH $a RETURN count(x)", "10.4.0.2:", null),
          "no phantom External for the connections only host-f reported");
      assertEquals(2, count("MATCH (:Process {id: $a})-[t:TALKS_TO]->() RETURN count(t)", client, null),
          "host-f's edges: host-g and the outside address");
      Record x = single("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:External {id: $b}) RETURN t.connections AS n, "
          + "t.connectionsEstimated AS est, t.connectionsSampled AS sampled", client, "93.184.216.34:443");
      assertEquals(1, x.get("n").asLong());
      assertEquals(2.0, x.get("est").asDouble());
      assertEquals(1, x.get("sampled").asLong());

      Record plain = single("MATCH (:Process {hostId: $a})-[t:TALKS_TO]->(:Process {hostId: $b}) RETURN "
          + "t.connections AS n, t.connectionsEstimated AS est, t.connectionsSampled AS sampled", "host-h", "host-i");
      assertEquals(1, plain.get("n").asLong());
      assertEquals(1.0, plain.get("est").asDouble(), "nothing sampled: the estimate is the count");
      assertEquals(0, plain.get("sampled").asLong());
    } finally {
      job.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /** host-f's client end of a connection to host-g 10.4.0.2:9000, kept with {@code keep}. */
  static ConnectionEvent sampledClient(int port, long sent, long received, double keep) {
    ConnectionEvent e = event("host-f", 3201, "java", null, null, ConnectionEventKind.SNAPSHOT, ConnectionRole.CLIENT,
        "10.4.0.1", port, "10.4.0.2", 9000, 1_000, sent, received, port);
    e.setProcessStartTimeNs(5000);
    e.setKeepProbability(keep);
    return e;
  }

  static ConnectionEvent sampledServer(int clientPort, long received, long sent, double keep) {
    ConnectionEvent e = event("host-g", 4201, "java", null, null, ConnectionEventKind.SNAPSHOT, ConnectionRole.SERVER,
        "10.4.0.2", 9000, "10.4.0.1", clientPort, 1_000, sent, received, 100_000 + clientPort);
    e.setProcessStartTimeNs(6000);
    e.setKeepProbability(keep);
    return e;
  }

  /**
   * A restart of the whole job (not a task failover: a new job, as when bin/wattgraph run or a job
   * manager without HA starts again) continues from the newest checkpoint the previous run left in
   * its checkpoint directory. A connection counted, closed and forgotten by the first run stays in
   * the edge's totals after its events left the topic; with empty state (--restore none) the second
   * run would overwrite the totals with its own (verified: the wait below times out at 1, 5, 50).
   */
  @Test
  void aRestartedJobContinuesFromTheNewestRetainedCheckpoint() throws Exception {
    String topic = "wattgraph.connections.restart";
    stack.kafka.createTopic(topic, 1);
    JobConfig c = stack.config("it-restart");
    c.topic = topic;
    c.parallelism = 1;
    c.pairingHorizonMs = 500;
    c.checkpointIntervalMs = 300;
    c.checkpointDir = stack.checkpointDir("restart");
    assertEquals(null, CorrelationJob.restorePath(c), "nothing to restore the first time");
    String client = "host-r/3101/5000";
    String server = "host-s/4101/6000";
    String edge = "MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) "
        + "RETURN coalesce(max(t.connections * 1000000 + t.bytesClientToServer * 1000 + t.bytesServerToClient), 0)";

    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    JobClient first = env.executeAsync("correlation-it-restart-1");
    try {
      for (ConnectionEvent e : connection(41000, 31, 32, 7, 70)) {
        send(topic, e);
      }
      await(() -> count(edge, client, server) == 1_007_070, "the first run's connection on the edge");
      // A checkpoint completed after the connection was processed (and closed: retention 1 s).
      Thread.sleep(1500);
      String before = LatestCheckpoint.under(c.checkpointDir).orElse("");
      stack.await(() -> {
        try {
          return !LatestCheckpoint.under(c.checkpointDir).orElse("").equals(before);
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }, () -> "a newer checkpoint than " + before);
    } finally {
      first.cancel().get(1, TimeUnit.MINUTES);
    }

    // While the job is down, retention removes the first run's events (the job only has them in its
    // state now), and a second connection on the same edge comes.
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, c.kafkaBrokers))) {
      admin.deleteRecords(Map.of(new TopicPartition(topic, 0), RecordsToDelete.beforeOffset(4))).all().get();
    }
    for (ConnectionEvent e : connection(41001, 33, 34, 5, 50)) {
      send(topic, e);
    }
    String from = CorrelationJob.restorePath(c);
    assertTrue(from != null && from.contains("/chk-"), "the retained checkpoint: " + from);
    StreamExecutionEnvironment env2 = StreamJobHarness.environment(false);
    CorrelationJob.build(env2, c);
    JobClient second = env2.executeAsync("correlation-it-restart-2");
    try {
      await(() -> count(edge, client, server) == 2_012_120, "both runs' connections: 2, 12 and 120 bytes");
    } finally {
      second.cancel().get(1, TimeUnit.MINUTES);
    }
  }

  /** Opened and closed on both ends (host-r client, host-s server): c2s and s2c bytes. */
  static List<ConnectionEvent> connection(int clientPort, long clientCookie, long serverCookie, long c2s, long s2c) {
    List<ConnectionEvent> events = new ArrayList<>();
    for (ConnectionEventKind kind : List.of(ConnectionEventKind.OPENED, ConnectionEventKind.CLOSED)) {
      boolean closed = kind == ConnectionEventKind.CLOSED;
      ConnectionEvent cl = event("host-r", 3101, "java", null, null, kind, ConnectionRole.CLIENT, "10.3.0.1",
          clientPort, "10.3.0.2", 9000, closed ? 2_000 : 1_000, closed ? c2s : 0, closed ? s2c : 0, clientCookie);
      cl.setProcessStartTimeNs(5000);
      ConnectionEvent sv = event("host-s", 4101, "java", null, null, kind, ConnectionRole.SERVER, "10.3.0.2", 9000,
          "10.3.0.1", clientPort, closed ? 2_000 : 1_000, closed ? s2c : 0, closed ? c2s : 0, serverCookie);
      sv.setProcessStartTimeNs(6000);
      events.add(cl);
      events.add(sv);
    }
    return events;
  }

  static void send(String topic, ConnectionEvent e) throws Exception {
    stack.produce(List.of(new ProducerRecord<>(topic, kafkaKey(e), encode(e))));
  }

  static void await(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
    stack.await(condition, what);
  }

  /** Runs the job in a MiniCluster until the source reached the end offsets of its start. */
  static void runBounded(String groupId) throws Exception {
    JobConfig c = stack.config(groupId);
    c.parallelism = 2;
    c.checkpointIntervalMs = 500;
    c.checkpointDir = stack.checkpointDir(groupId);
    c.bounded = true;
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, c);
    StreamJobHarness.runToEnd(env, "correlation-it-" + groupId);
  }

  static void produceScenario() throws Exception {
    List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
    List<ConnectionEvent> events = new ArrayList<>();
    // 1: curl (host-a) -> nginx (host-b), opened, snapshot, closed on both ends.
    events.add(curl(ConnectionEventKind.OPENED, 40001, 1_000, 0, 0));
    events.add(nginx(ConnectionEventKind.OPENED, 40001, 1_500, 0, 0));
    events.add(curl(ConnectionEventKind.SNAPSHOT, 40001, 2_000, 1000, 5000));
    events.add(nginx(ConnectionEventKind.SNAPSHOT, 40001, 2_500, 4800, 1000));
    events.add(curl(ConnectionEventKind.CLOSED, 40001, 3_000, 1200, 6000));
    events.add(nginx(ConnectionEventKind.CLOSED, 40001, 3_500, 6100, 1150));
    // 2: a second curl -> nginx connection; the server end is reported first.
    events.add(nginx(ConnectionEventKind.SNAPSHOT, 40002, 8_000, 700, 250));
    events.add(curl(ConnectionEventKind.SNAPSHOT, 40002, 9_000, 300, 700));
    // 3: curl -> an address outside the monitored hosts (no peer agent).
    ConnectionEvent out = curl(ConnectionEventKind.SNAPSHOT, 40003, 4_000, 50, 4000);
    out.setRemoteAddress(IpAddresses.parse("93.184.216.34"));
    out.setRemotePort(443);
    events.add(out);
    // 4: an outside client of nginx, socket never seen in process context.
    ConnectionEvent in = event("host-b", 0, "", null, null, ConnectionEventKind.SNAPSHOT, ConnectionRole.SERVER,
        "10.1.0.2", 8080, "198.51.100.7", 55555, 5_000, 90, 77, 1L << 40);
    events.add(in);
    // 5: loopback on host-b: nginx -> redis (in a container).
    events.add(event("host-b", 2002, "nginx", "nginx -g daemon off;", null, ConnectionEventKind.SNAPSHOT,
        ConnectionRole.CLIENT, "127.0.0.1", 45000, "127.0.0.1", 6379, 6_000, 64, 100, 501));
    events.add(event("host-b", 2003, "redis-server", "redis-server *:6379", "c0ffee",
        ConnectionEventKind.SNAPSHOT, ConnectionRole.SERVER, "127.0.0.1", 6379, "127.0.0.1", 45000, 6_500,
        128, 60, 502));
    for (ConnectionEvent ev : events) {
      records.add(new ProducerRecord<>(TOPIC, kafkaKey(ev), encode(ev)));
    }
    // Poison records: each must go to the dead-letter topic, not crash the job.
    for (byte[] poison : poison()) {
      records.add(new ProducerRecord<>(TOPIC, "garbage", poison));
    }
    stack.produce(records);
  }

  /** Garbage, an unknown schema fingerprint, a port out of range. */
  static List<byte[]> poison() throws Exception {
    ConnectionEvent badPort = curl(ConnectionEventKind.SNAPSHOT, 40009, 1_000, 1, 1);
    badPort.setRemotePort(70000);
    return List.of(new byte[] {(byte) 0xC3, 0x01, 1, 2, 3},
        new byte[] {(byte) 0xC3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0},
        encode(badPort));
  }

  static final String DLQ = "wattgraph.dlq";

  static List<ConsumerRecord<byte[], byte[]>> readDeadLetters() {
    return stack.readAll(DLQ);
  }

  public static ConnectionEvent curl(ConnectionEventKind kind, int port, long t, long sent, long received) {
    return event("host-a", 1001, "curl", "curl http://10.1.0.2:8080/", null, kind, ConnectionRole.CLIENT,
        "10.1.0.1", port, "10.1.0.2", 8080, t, sent, received, 100 + port);
  }

  static ConnectionEvent nginx(ConnectionEventKind kind, int clientPort, long t, long sent, long received) {
    return event("host-b", 2002, "nginx", "nginx -g daemon off;", null, kind, ConnectionRole.SERVER,
        "10.1.0.2", 8080, "10.1.0.1", clientPort, t, sent, received, 200 + clientPort);
  }

  public static ConnectionEvent event(String host, int tgid, String comm, String cmdline, String containerId,
      ConnectionEventKind kind, ConnectionRole role, String localIp, int localPort, String remoteIp,
      int remotePort, long t, long sent, long received, long cookie) {
    return ConnectionEvent.newBuilder()
        .setKind(kind)
        .setHostId(host)
        .setEventTimeNs(t)
        .setLocalAddress(IpAddresses.parse(localIp))
        .setLocalPort(localPort)
        .setRemoteAddress(IpAddresses.parse(remoteIp))
        .setRemotePort(remotePort)
        .setRole(role)
        .setPid(tgid)
        .setTgid(tgid)
        .setProcessStartTimeNs(tgid == 0 ? 0 : tgid == 1001 ? 5000 : tgid == 2002 ? 6000 : 7000)
        .setComm(comm)
        .setCmdline(cmdline)
        .setCgroupId(tgid == 0 ? 0 : 4242)
        .setContainerId(containerId)
        .setNetnsInode(4026531840L)
        .setSocketCookie(cookie)
        .setBytesSent(sent)
        .setBytesReceived(received)
        .build();
  }

  /** contracts.md: clientIp:clientPort>serverIp:serverPort. */
  static String kafkaKey(ConnectionEvent e) {
    String local = IpAddresses.format(e.getLocalAddress()) + ":" + e.getLocalPort();
    String remote = IpAddresses.format(e.getRemoteAddress()) + ":" + e.getRemotePort();
    return e.getRole() == ConnectionRole.SERVER ? remote + ">" + local : local + ">" + remote;
  }

  public static byte[] encode(ConnectionEvent e) throws Exception {
    return StreamJobHarness.bytes(WattgraphSchemas.connectionEventEncoder().encode(e));
  }

  static Record talksTo(String client, String server) {
    return single("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) "
        + "RETURN t.bytesClientToServer AS c2s, t.bytesServerToClient AS s2c, t.connections AS n, "
        + "t.firstSeenNs AS first, t.lastSeenNs AS last", client, server);
  }

  static Record single(String cypher, String a, String b) {
    return stack.single(cypher, params(a, b));
  }

  static long count(String cypher, String a, String b) {
    return single(cypher, a, b).get(0).asLong();
  }

  static Map<String, Object> params(String a, String b) {
    Map<String, Object> m = new TreeMap<>();
    m.put("a", a);
    m.put("b", b);
    return m;
  }

  static List<String> dump() {
    return stack.dump();
  }
}
