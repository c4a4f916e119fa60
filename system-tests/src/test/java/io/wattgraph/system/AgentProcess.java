package io.wattgraph.system;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A real wattgraph-agent acting as one host: it watches only its namespace's sockets. */
final class AgentProcess implements AutoCloseable {
  private final Process process;
  private final Path log;

  AgentProcess(Path binary, String hostId, Path netns, String kafka, Path workDir) throws Exception {
    this(binary, hostId, netns, kafka, workDir, List.of());
  }

  /** As above, with further agent flags (e.g. the power-cap ones). */
  AgentProcess(Path binary, String hostId, Path netns, String kafka, Path workDir, List<String> extraArgs)
      throws Exception {
    Files.createDirectories(workDir);
    Path ready = workDir.resolve(hostId + ".ready");
    Files.deleteIfExists(ready);
    log = workDir.resolve(hostId + ".log");
    List<String> cmd = new ArrayList<>(List.of(binary.toString(),
        "--host-id", hostId, "--kafka-brokers", kafka, "--netns", netns.toString(),
        "--ready-file", ready.toString()));
    cmd.addAll(extraArgs);
    process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!Files.exists(ready)) {
      if (!process.isAlive()) {
        throw new IllegalStateException("agent " + hostId + " exited " + process.exitValue() + ": " + logText());
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("agent " + hostId + " not attached after 60 s: " + logText());
      }
      Thread.sleep(100);
    }
  }

  String logText() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  /** SIGTERM, then the exit code (the agent flushes to Kafka, detaches, restores what it changed). */
  int stop() throws Exception {
    process.destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor();
    }
    return process.exitValue();
  }

  @Override
  public void close() throws Exception {
    if (process.isAlive()) {
      stop();
    }
  }
}
