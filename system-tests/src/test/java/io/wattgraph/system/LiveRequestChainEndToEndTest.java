package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.Neo4jServer;
import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.schema.WindowMetrics;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Record;
import org.neo4j.driver.Session;

/**
 * Real agents, real timing, the whole way to the REST API. Three namespace hosts with one real agent
 * each, local-stack's Kafka and Neo4j, the production job in this JVM (windows 2 s, out-of-orderness
 * 1 s, idleness 2 s) and the packaged graph service. The stack stays quiet for longer than the
 * idleness and the out-of-orderness, so the TransactionStats source is idle before its first record
 * (what a new user's first run does); then HTTP/1.1 requests go through a chain of processes on
 * different hosts, each its own process: client (host-a) -> proxy (host-b) -> backend (host-c) ->
 * store (host-a), the backend calling the store twice per request. A burst of 25 requests, a pause
 * longer than the idleness and the out-of-orderness, a second burst that runs (bounded) until the
 * live checks are done; then every process stops (closing its connections counts their last
 * transactions).
 *
 * <p>Asserted: while the second burst runs, every edge of the chain carries in Neo4j request rate and
 * p50/p99 client RTT and server time of one of its windows (those of the edge-metrics topic), and the
 * REST API's critical path (process level, longest, p99 and p50) is the chain; over the whole run the
 * request counts per edge (the edge-metrics topic, every window's last revision) equal what each hop
 * made, on both ends, and no other edge has any; each process's CPU from its agent's ResourceSamples
 * is on its node and in its windows.
 */
class LiveRequestChainEndToEndTest {
  static final Path WORK = Path.of("target", "system-test-live-chain").toAbsolutePath();
  static final String[] HOSTS = {"host-a", "host-b", "host-c"};
  static final int WINDOW_MS = 2000;
  static final int OUT_OF_ORDERNESS_MS = 1000;
  static final int IDLENESS_MS = 2000;
  static final int FIRST_BURST = 25;
  /** The second burst runs until the live checks are done, at most this many requests. */
  static final int SECOND_BURST_MAX = 1200;
  static final int STORE_CALLS = 2;
  static final int REQUEST_GAP_MS = 100;

  private final List<AutoCloseable> started = new ArrayList<>();
  private final List<AgentProcess> agents = new ArrayList<>();
  private KafkaBroker kafka;
  private Driver driver;

  @Test
  void requestsThroughAChainOfHostsAfterAQuietStart() throws Exception {
    Preconditions.requireRoot();
    Path agentBin = Preconditions.agentBinary();
    Files.createDirectories(WORK);
    long t0 = System.nanoTime();
    try {
      NamespaceHosts net = add(new NamespaceHosts("lc" + ProcessHandle.current().pid() % 10000, 78, HOSTS.length));
      kafka = add(KafkaBroker.start(WORK.resolve("kafka-" + System.nanoTime()), 0, 0));
      for (String topic : List.of("wattgraph.connections", "wattgraph.resources", "wattgraph.transactions")) {
        kafka.createTopic(topic, 2);
      }
      Neo4jServer neo4j = add(Neo4jServer.start(WORK.resolve("neo4j-" + System.nanoTime()), 0));
      driver = add(GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none()));
      // Checkpoints of this run only: the job restores the newest under its directory (--restore latest).
      add(RunningJob.start(kafka.bootstrapServers(), "wattgraph.connections", neo4j.boltUri(),
          WORK.resolve("flink-" + System.nanoTime()),
          "--window-ms", String.valueOf(WINDOW_MS), "--max-out-of-orderness-ms", String.valueOf(OUT_OF_ORDERNESS_MS),
          "--idleness-ms", String.valueOf(IDLENESS_MS), "--checkpoint-interval-ms", "1000"));
      for (int i = 0; i < HOSTS.length; i++) {
        agents.add(add(new AgentProcess(agentBin, HOSTS[i], net.nsPath(i), kafka.bootstrapServers(),
            WORK.resolve("agents"), List.of("--cgroup-sample-interval-ms", "0"))));
      }
      long agentsUpNs = System.nanoTime();
      GraphServiceProcess service = add(new GraphServiceProcess(neo4j.boltUri(), WORK.resolve("graph-service")));
      String a = net.addresses.get(0);
      String b = net.addresses.get(1);
      String c = net.addresses.get(2);
      Process store = server(net.namespaces.get(0), a, 8300, null, 0);
      Process backend = server(net.namespaces.get(2), c, 8200, "http://" + a + ":8300/store", STORE_CALLS);
      Process proxy = server(net.namespaces.get(1), b, 8100, "http://" + c + ":8200/backend", 1);
      Process client = add(new ProcessBuilder(peer(net.namespaces.get(0), "client", "http://" + b + ":8100/front",
          String.valueOf(REQUEST_GAP_MS))).redirectError(WORK.resolve("client.log").toFile()).start());
      long stackUpMs = elapsedMs(t0);

      // Quiet, no request yet: three windows of every agent's samples closed (the job runs and the
      // agents' clock moves it), and since the agents started three times the idleness plus the
      // out-of-orderness, so the TransactionStats source is idle.
      await(() -> HOSTS.length == List.of(HOSTS).stream().filter(h -> hostWindows(h) >= 3).count(),
          () -> "3 windows of each host's samples " + List.of(HOSTS).stream().map(h -> h + "=" + hostWindows(h)).toList());
      long quiet = 3L * (IDLENESS_MS + OUT_OF_ORDERNESS_MS) - elapsedMs(agentsUpNs);
      if (quiet > 0) {
        Thread.sleep(quiet);
      }
      long quietMs = elapsedMs(agentsUpNs);

      BufferedReader clientOut = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
      Writer clientIn = new OutputStreamWriter(client.getOutputStream(), StandardCharsets.UTF_8);
      long first = command(clientIn, clientOut, String.valueOf(FIRST_BURST));
      Thread.sleep(3L * IDLENESS_MS); // the pause: longer than the idleness and the out-of-orderness
      long secondStartNs = System.currentTimeMillis() * 1_000_000L;
      clientIn.write("run " + SECOND_BURST_MAX + "\n");
      clientIn.flush();

      String clientId = processId("host-a", client.pid());
      String proxyId = processId("host-b", proxy.pid());
      String backendId = processId("host-c", backend.pid());
      String storeId = processId("host-a", store.pid());
      List<String[]> edges = List.of(new String[] {clientId, proxyId}, new String[] {proxyId, backendId},
          new String[] {backendId, storeId});
      // While requests flow, every edge of the chain gets a window of this burst with rate, client RTT
      // and server time, the window's figures on the topic (the two ends of a transaction may fall into
      // neighbouring windows, as each agent's intervals end on its own clock: a burst's first and last
      // windows can have one end only).
      for (String[] e : edges) {
        await(() -> liveWindow(e[0], e[1], secondStartNs), () -> "a window of the second burst with request rate, "
            + "client RTT and server time on " + e[0] + " -> " + e[1] + ": " + edge(e[0], e[1]));
      }
      // The REST API: the critical path is the chain, at the tail and at the median.
      List<String> chain = List.of(clientId, proxyId, backendId, storeId);
      for (String percentile : List.of("p99", "p50")) {
        String q = "/api/v1/analysis/critical-path?level=process&mode=longest&percentile=" + percentile;
        await(() -> chain.equals(path(service.get(q))), () -> "critical path " + percentile + " = " + chain + ": "
            + service.get(q));
      }
      long liveChecksMs = elapsedMs(t0);
      clientIn.write("stop\n");
      clientIn.flush();
      long second = Long.parseLong(clientOut.readLine().substring("done ".length()));
      clientIn.close();
      assertTrue(client.waitFor(60, TimeUnit.SECONDS) && client.exitValue() == 0, "the client exits 0 (client.log)");
      // Closing each hop's connections counts its last transactions (a client's last is counted at close).
      for (Process p : List.of(proxy, backend, store)) {
        p.destroy();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "a chain server stops");
      }

      // Exact request counts over the run, both ends of every edge, and no other edge.
      long requests = first + second;
      Map<String, Long> expected = new TreeMap<>(Map.of(
          edgeKey(clientId, proxyId), requests,
          edgeKey(proxyId, backendId), requests,
          edgeKey(backendId, storeId), STORE_CALLS * requests));
      await(() -> expected.equals(totals(true)) && expected.equals(totals(false)),
          () -> "per edge over the run: expected " + expected + ", client ends " + totals(true) + ", server ends "
              + totals(false));
      long countsMs = elapsedMs(t0);

      // Each process's CPU from its agent's ResourceSamples: on its node, and in its windows.
      Map<String, WindowMetrics> metrics = processWindows();
      for (String[] p : List.of(new String[] {"host-a", clientId}, new String[] {"host-b", proxyId},
          new String[] {"host-c", backendId}, new String[] {"host-a", storeId})) {
        String host = p[0];
        String id = p[1];
        double cpuSeconds = metrics.entrySet().stream()
            .filter(m -> m.getKey().startsWith("PROCESS|" + host + "|" + id + "@"))
            .mapToDouble(m -> m.getValue().getCpuSeconds()).sum();
        assertTrue(cpuSeconds > 0, "CPU of " + id + " in its windows: " + cpuSeconds);
        Map<String, Object> node = node(id);
        // Not cpuUsage: a client's last transaction is counted at its close, so its latest window
        // can hold that transaction and no ResourceSample (it exited before the next sample).
        assertTrue(node.get("metricsWindowEndNs") != null, "metrics on " + id + ": " + node);
        assertTrue(((List<?>) node.get("historyCpuUsage")).stream().anyMatch(v -> ((Number) v).doubleValue() > 0),
            "a window with CPU in the history of " + id + ": " + node);
      }
      System.out.printf("live chain: stack up at %d ms, quiet for %d ms after the agents, %d + %d requests, "
          + "live checks done at %d ms, exact counts at %d ms, all checked at %d ms%n", stackUpMs, quietMs, first,
          second, liveChecksMs, countsMs, elapsedMs(t0));
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(e.getMessage() + agentLogs(), e);
    } finally {
      for (int i = started.size() - 1; i >= 0; i--) {
        try {
          started.get(i).close();
        } catch (Exception e) {
          System.err.println("teardown: " + e);
        }
      }
    }
  }

  private <T extends AutoCloseable> T add(T c) {
    started.add(c);
    return c;
  }

  private Process add(Process p) {
    started.add(() -> {
      p.destroy();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    });
    return p;
  }

  static long elapsedMs(long t0) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
  }

  /** The command running HttpChainPeer in a namespace (as its own process: `ip netns exec` execs). */
  static List<String> peer(String ns, String... args) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = Path.of(HttpChainPeer.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", ns, java, "-Xmx64m", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        // No idle connection is closed under a client during the pause (a request racing the close
        // would be sent on a dead connection).
        "-Dsun.net.httpserver.idleInterval=3600", "-cp", cp, HttpChainPeer.class.getName()));
    cmd.addAll(List.of(args));
    return cmd;
  }

  /** A chain server listening on addr:port in namespace ns; started and ready, or the test fails. */
  private Process server(String ns, String addr, int port, String upstream, int calls) throws Exception {
    Path ready = WORK.resolve("server-" + port + ".ready");
    Files.deleteIfExists(ready);
    List<String> args = new ArrayList<>(List.of("server", addr, String.valueOf(port), ready.toString()));
    if (upstream != null) {
      args.addAll(List.of(upstream, String.valueOf(calls)));
    }
    Process p = add(new ProcessBuilder(peer(ns, args.toArray(String[]::new))).redirectErrorStream(true)
        .redirectOutput(WORK.resolve("server-" + port + ".log").toFile()).start());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!Files.exists(ready)) {
      assertTrue(p.isAlive(), "server " + port + " exited: " + Files.readString(WORK.resolve("server-" + port + ".log")));
      assertTrue(System.nanoTime() < deadline, "server " + port + " did not listen within 60 s");
      Thread.sleep(50);
    }
    return p;
  }

  /** A command to the client; the requests it made, all answered. */
  static long command(Writer in, BufferedReader out, String command) throws Exception {
    in.write(command + "\n");
    in.flush();
    String line = out.readLine();
    assertTrue(line != null && line.startsWith("done "), "the client made its requests (client.log): " + line);
    return Long.parseLong(line.substring("done ".length()));
  }

  /**
   * Whether the edge's window in Neo4j began after {@code afterNs}, has request rate, client RTT and
   * server time (p50, p99), and the figures of that window and revision on the edge-metrics topic.
   */
  boolean liveWindow(String client, String server, long afterNs) {
    Map<String, Object> t = edge(client, server);
    List<String> props = List.of("requestRate", "clientRttP50Ns", "clientRttP99Ns", "serverTimeP50Ns", "serverTimeP99Ns");
    if (t.get("latencyWindowStartNs") == null || ((Number) t.get("latencyWindowStartNs")).longValue() < afterNs
        || props.stream().anyMatch(p -> t.get(p) == null)) {
      return false;
    }
    EdgeMetrics w = edgeWindows().get(edgeKey(client, server) + "@" + t.get("latencyWindowEndNs"));
    return w != null && w.getRevision() == ((Number) t.get("latencyRevision")).longValue()
        && w.getRequestRate() == ((Number) t.get("requestRate")).doubleValue()
        && w.getClientRttP50Ns().equals(((Number) t.get("clientRttP50Ns")).longValue())
        && w.getClientRttP99Ns().equals(((Number) t.get("clientRttP99Ns")).longValue())
        && w.getServerTimeP50Ns().equals(((Number) t.get("serverTimeP50Ns")).longValue())
        && w.getServerTimeP99Ns().equals(((Number) t.get("serverTimeP99Ns")).longValue());
  }

  static String edgeKey(String client, String server) {
    return "P:" + client + ">P:" + server;
  }

  /** The graph's id of the process pid of host (the connection graph makes the node). */
  String processId(String host, long pid) throws InterruptedException {
    String q = "MATCH (p:Process {hostId: $h, pid: $pid}) RETURN p.id AS id";
    await(() -> read(q, Map.of("h", host, "pid", pid)).size() == 1, () -> "the process " + host + "/" + pid
        + " in the graph: " + read("MATCH (p:Process) RETURN p.id AS id", Map.of()).stream().map(r -> r.get("id")).toList());
    return read(q, Map.of("h", host, "pid", pid)).get(0).get("id").asString();
  }

  /** Transactions per edge over every window (its last revision) as the client or the server ends counted them. */
  Map<String, Long> totals(boolean clientEnds) {
    Map<String, Long> sums = new TreeMap<>();
    for (Map.Entry<String, EdgeMetrics> e : edgeWindows().entrySet()) {
      String edge = e.getKey().substring(0, e.getKey().lastIndexOf('@'));
      EdgeMetrics m = e.getValue();
      sums.merge(edge, clientEnds ? m.getClientTransactions() : m.getServerTransactions(), Long::sum);
    }
    return sums;
  }

  /** The last revision of every edge window, "key@windowEndNs". */
  Map<String, EdgeMetrics> edgeWindows() {
    Map<String, EdgeMetrics> m = new TreeMap<>();
    for (ConsumerRecord<byte[], byte[]> r : readCommitted("wattgraph.edge-metrics")) {
      EdgeMetrics e = decode(() -> WattgraphSchemas.edgeMetricsDecoder().decode(r.value()));
      m.merge(new String(r.key(), StandardCharsets.UTF_8) + "@" + e.getWindowEndNs(), e,
          (x, y) -> y.getRevision() >= x.getRevision() ? y : x);
    }
    return m;
  }

  /** The last revision of every PROCESS window, "PROCESS|host|id@windowEndNs". */
  Map<String, WindowMetrics> processWindows() {
    Map<String, WindowMetrics> m = new TreeMap<>();
    for (ConsumerRecord<byte[], byte[]> r : readCommitted("wattgraph.metrics")) {
      String key = new String(r.key(), StandardCharsets.UTF_8);
      if (key.startsWith("PROCESS|")) {
        WindowMetrics w = decode(() -> WattgraphSchemas.windowMetricsDecoder().decode(r.value()));
        m.merge(key + "@" + w.getWindowEndNs(), w, (x, y) -> y.getRevision() >= x.getRevision() ? y : x);
      }
    }
    return m;
  }

  /** Windows of a host's HOST samples on the metrics topic. */
  long hostWindows(String host) {
    return readCommitted("wattgraph.metrics").stream()
        .filter(r -> new String(r.key(), StandardCharsets.UTF_8).equals("HOST|" + host + "|" + host))
        .map(ConsumerRecord::timestamp).distinct().count();
  }

  interface Decode<T> {
    T get() throws Exception;
  }

  static <T> T decode(Decode<T> d) {
    try {
      return d.get();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /** Every committed record of a topic up to its end offsets of now (none while it does not exist). */
  List<ConsumerRecord<byte[], byte[]>> readCommitted(String topic) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      if (!c.listTopics().containsKey(topic)) {
        return out;
      }
      List<TopicPartition> parts = c.partitionsFor(topic).stream().map(i -> new TopicPartition(topic, i.partition())).toList();
      c.assign(parts);
      c.seekToBeginning(parts);
      Map<TopicPartition, Long> end = c.endOffsets(parts);
      while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
        c.poll(Duration.ofMillis(200)).forEach(out::add);
      }
    }
    return out;
  }

  List<Record> read(String cypher, Map<String, Object> params) {
    try (Session s = driver.session()) {
      return s.executeRead(tx -> tx.run(cypher, params).list());
    }
  }

  Map<String, Object> edge(String client, String server) {
    List<Record> r = read("MATCH (:Process {id: $a})-[t:TALKS_TO]->(:Process {id: $b}) RETURN properties(t) AS t",
        Map.of("a", client, "b", server));
    return r.isEmpty() ? Map.of() : r.get(0).get("t").asMap();
  }

  Map<String, Object> node(String id) {
    return read("MATCH (p:Process {id: $id}) RETURN properties(p) AS p", Map.of("id", id)).get(0).get("p").asMap();
  }

  /** The "path" of a critical-path answer, empty when there is none. */
  static List<String> path(String json) {
    if (json.isEmpty()) {
      return List.of();
    }
    try {
      JsonNode path = new ObjectMapper().readTree(json).path("path");
      List<String> out = new ArrayList<>();
      path.forEach(n -> out.add(n.asText()));
      return out;
    } catch (Exception e) {
      throw new AssertionError("not JSON: " + json, e);
    }
  }

  String agentLogs() {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < agents.size(); i++) {
      String log = agents.get(i).logText();
      s.append("\n--- agent ").append(HOSTS[i]).append(" (last 2000 chars)\n")
          .append(log.substring(Math.max(0, log.length() - 2000)));
    }
    return s.toString();
  }

  /** Polls every 250 ms; the 3 min deadline only turns a hang into a failure. */
  static void await(BooleanSupplier done, Supplier<String> what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("timed out waiting for " + what.get());
      }
      Thread.sleep(250);
    }
  }
}
