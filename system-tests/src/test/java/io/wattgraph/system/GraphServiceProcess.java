package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The packaged graph service (graph-service's Spring Boot jar, as {@code bin/wattgraph run} starts
 * it) as a process of its own on a free loopback port, reading the test's Neo4j; stopped on close.
 */
final class GraphServiceProcess implements AutoCloseable {
  static final Path JAR = Path.of(System.getProperty("wattgraph.graphServiceJar",
      "../graph-service/target/wattgraph-graph-service-0.1.0-SNAPSHOT.jar"));

  private final Process process;
  private final Path log;
  final String baseUrl;

  /** {@code extraArgs} come after the defaults (Spring's last value of a property wins). */
  GraphServiceProcess(String boltUri, Path workDir, String... extraArgs) throws Exception {
    if (!Files.isRegularFile(JAR)) {
      fail("needs the packaged graph service (" + JAR.toAbsolutePath() + "): mvn -pl graph-service -am package");
    }
    Files.createDirectories(workDir);
    log = workDir.resolve("graph-service.log");
    int port = FlinkClusterEndToEndTest.freePort();
    baseUrl = "http://127.0.0.1:" + port;
    String java = ProcessHandle.current().info().command().orElse("java");
    List<String> command = new ArrayList<>(List.of(java, "-Xmx512m", "-XX:+UseSerialGC",
        "-Djava.io.tmpdir=" + workDir, "-jar", JAR.toAbsolutePath().toString(), "--server.address=127.0.0.1",
        "--server.port=" + port, "--wattgraph.neo4j.uri=" + boltUri, "--wattgraph.auth.enabled=false"));
    command.addAll(List.of(extraArgs));
    process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
    while (!get("/actuator/health").contains("\"UP\"")) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        close();
        fail("the graph service did not come up (" + (process.isAlive() ? "still starting" : "exited "
            + process.exitValue()) + "): " + logTail());
      }
      Thread.sleep(250);
    }
  }

  /** The body of a 200 answer to GET {@code path}, else "". */
  String get(String path) {
    return FlinkClusterEndToEndTest.get(baseUrl + path);
  }

  boolean isAlive() {
    return process.isAlive();
  }

  String logTail() {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor();
    }
  }
}
