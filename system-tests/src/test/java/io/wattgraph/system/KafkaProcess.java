package io.wattgraph.system;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * local-stack's Kafka broker in a JVM of its own, as {@code bin/wattgraph run} starts it
 * ({@code LocalStackMain kafka DIR PORT CONTROLLER_PORT TOPIC...}), so a test can kill it with
 * SIGKILL and start it again on the same log directory and ports.
 */
final class KafkaProcess implements AutoCloseable {
  private final Path dir;
  private final int port;
  private final int controllerPort;
  private final List<String> topics;
  private Process process;
  private int starts;

  KafkaProcess(Path dir, List<String> topics) throws Exception {
    this.dir = dir;
    this.topics = topics;
    int[] ports = freePorts(2);
    this.port = ports[0];
    this.controllerPort = ports[1];
    start();
  }

  String bootstrapServers() {
    return "127.0.0.1:" + port;
  }

  /** The broker's port on 127.0.0.1. */
  int port() {
    return port;
  }

  /** Starts the broker (again) on the same directory and ports; returns once it serves. */
  void start() throws Exception {
    Files.deleteIfExists(dir.resolve("ready"));
    String java = ProcessHandle.current().info().command().orElse("java");
    List<String> cmd = new ArrayList<>(List.of(java, "-Xmx768m", "-cp", System.getProperty("java.class.path"),
        "io.wattgraph.localstack.LocalStackMain", "kafka", dir.toString(), String.valueOf(port),
        String.valueOf(controllerPort)));
    cmd.addAll(topics);
    Path log = dir.resolveSibling(dir.getFileName() + "-" + (++starts) + ".log");
    process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!Files.exists(dir.resolve("ready"))) {
      if (!process.isAlive()) {
        throw new IllegalStateException("Kafka exited " + process.exitValue() + ": " + Files.readString(log));
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("Kafka not ready after 120 s: " + Files.readString(log));
      }
      Thread.sleep(100);
    }
  }

  /** SIGKILL, as a crash or the OOM killer: no shutdown hook, nothing flushed by the broker. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor();
  }

  @Override
  public void close() throws Exception {
    if (process != null && process.isAlive()) {
      process.destroy();
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        kill();
      }
    }
  }

  static int[] freePorts(int n) throws IOException {
    List<ServerSocket> held = new ArrayList<>();
    int[] ports = new int[n];
    try {
      for (int i = 0; i < n; i++) {
        ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        held.add(s);
        ports[i] = s.getLocalPort();
      }
      return ports;
    } finally {
      for (ServerSocket s : held) {
        s.close();
      }
    }
  }
}
