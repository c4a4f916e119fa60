package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One run of {@link ShortConnections}: its client on one namespace host, its server on another,
 * each its own process (their pids are the graph's Process ids), each counting what it completed.
 */
record ConnectionLoad(long connections, Shape shape, Hosts hosts, Process server, Process client, Path stop,
    Path serverCounts, Path clientCounts) {
  static final int REQUEST = 100;
  static final int RESPONSE = 1000;
  /** One request and one response per connection, raw bytes. */
  static final Shape SHORT = new Shape(1, 0, false);

  /** Request/response turns per connection, the pause between them, and whether they are HTTP/1.1. */
  record Shape(int exchanges, long gapMs, boolean http) {
    List<String> serverArgs() {
      return List.of(String.valueOf(exchanges), http ? "http" : "raw");
    }

    List<String> clientArgs() {
      return List.of(String.valueOf(exchanges), String.valueOf(gapMs), http ? "http" : "raw");
    }
  }

  /** Where the two ends run: host ids (as the agents report them), namespaces, the server's address. */
  record Hosts(String client, String clientNs, String server, String serverNs, String serverAddr) {}

  /**
   * Starts the server on {@code serverAddr:port} (returns once it listens) and the client making
   * {@code connections} connections at {@code perSecond}; {@code name} keeps this run's files apart.
   */
  static ConnectionLoad start(Path work, String name, Hosts hosts, int port, long connections, long perSecond)
      throws Exception {
    return start(work, name, hosts, port, connections, perSecond, SHORT, List.of());
  }

  /**
   * As above, with connections of {@code shape}, both processes started through {@code wrapper}
   * (e.g. {@link ProcessCgroup#wrapper}: a pod of their own).
   */
  static ConnectionLoad start(Path work, String name, Hosts hosts, int port, long connections, long perSecond,
      Shape shape, List<String> wrapper) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = Path.of(ShortConnections.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    Path ready = work.resolve(name + ".ready");
    Path stop = work.resolve(name + ".stop");
    Path serverCounts = work.resolve(name + ".server.counts");
    Path clientCounts = work.resolve(name + ".client.counts");
    for (Path p : List.of(ready, stop, serverCounts, clientCounts)) {
      Files.deleteIfExists(p);
    }
    List<String> serverCmd = new ArrayList<>(wrapper);
    serverCmd.addAll(List.of("ip", "netns", "exec", hosts.serverNs(), java, "-Xmx256m", "-cp", cp,
        ShortConnections.class.getName(), "server", hosts.serverAddr(), String.valueOf(port), ready.toString(),
        stop.toString(), serverCounts.toString(), String.valueOf(REQUEST), String.valueOf(RESPONSE), "300"));
    serverCmd.addAll(shape.serverArgs());
    Process server = new ProcessBuilder(serverCmd).inheritIO().start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!Files.exists(ready)) {
      if (!server.isAlive() || System.nanoTime() > deadline) {
        server.destroyForcibly();
        throw new AssertionError("the server of " + name + " did not listen within 30 s");
      }
      Thread.sleep(50);
    }
    List<String> clientCmd = new ArrayList<>(wrapper);
    clientCmd.addAll(List.of("ip", "netns", "exec", hosts.clientNs(), java, "-Xmx256m", "-cp", cp,
        ShortConnections.class.getName(), "client", hosts.serverAddr(), String.valueOf(port),
        String.valueOf(connections), String.valueOf(perSecond), String.valueOf(REQUEST), String.valueOf(RESPONSE),
        clientCounts.toString(), "150"));
    clientCmd.addAll(shape.clientArgs());
    Process client = new ProcessBuilder(clientCmd).inheritIO().start();
    return new ConnectionLoad(connections, shape, hosts, server, client, stop, serverCounts, clientCounts);
  }

  /** Waits for the client, stops the server; their counts, which must agree and be complete. */
  Map<String, Long> finish() throws Exception {
    assertTrue(client.waitFor(3, TimeUnit.MINUTES), "the client finished");
    Files.writeString(stop, "stop\n");
    assertTrue(server.waitFor(2, TimeUnit.MINUTES), "the server finished");
    Map<String, Long> c = counts(clientCounts);
    assertEquals(c, counts(serverCounts), "client and server agree");
    assertEquals(0L, c.get("failures"), "no connection failed");
    assertEquals(connections, c.get("connections"), "all connections made");
    assertEquals(connections * shape.exchanges(), c.get("transactions"), "every request answered");
    return c;
  }

  /** Both processes killed (teardown; nothing if they ended). */
  void destroy() {
    client.destroyForcibly();
    server.destroyForcibly();
  }

  static Map<String, Long> counts(Path file) throws Exception {
    Map<String, Long> m = new HashMap<>();
    for (String kv : Files.readString(file).trim().split(" ")) {
      String[] p = kv.split("=");
      m.put(p[0], Long.parseLong(p[1]));
    }
    return m;
  }
}
