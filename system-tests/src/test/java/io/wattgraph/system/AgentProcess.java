package io.wattgraph.system;

import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A real wattgraph-agent acting as one host: it watches only its namespace's sockets. */
final class AgentProcess implements AutoCloseable {
  private final String hostId;
  private final List<String> cmd;
  private final Path ready;
  private final Path log;
  private Process process;

  AgentProcess(Path binary, String hostId, Path netns, String kafka, Path workDir) throws Exception {
    this(binary, hostId, netns, kafka, workDir, List.of());
  }

  /** As above, with further agent flags (e.g. the power-cap ones). */
  AgentProcess(Path binary, String hostId, Path netns, String kafka, Path workDir, List<String> extraArgs)
      throws Exception {
    this(List.of(), binary, hostId, netns, kafka, workDir, extraArgs);
  }

  /** As above, started through {@code wrapper} (a command that execs its arguments, e.g. into a cgroup). */
  AgentProcess(List<String> wrapper, Path binary, String hostId, Path netns, String kafka, Path workDir,
      List<String> extraArgs) throws Exception {
    Files.createDirectories(workDir);
    this.hostId = hostId;
    ready = workDir.resolve(hostId + ".ready");
    log = workDir.resolve(hostId + ".log");
    Files.deleteIfExists(log);
    List<String> c = new ArrayList<>(wrapper);
    c.addAll(List.of(binary.toString(), "--host-id", hostId, "--kafka-brokers", kafka, "--netns", netns.toString(),
        "--ready-file", ready.toString()));
    c.addAll(extraArgs);
    cmd = List.copyOf(c);
    start();
  }

  /** Starts the agent (again, after {@link #kill}) and returns once its programs are attached. */
  void start() throws Exception {
    // A killed agent leaves its ready file behind.
    Files.deleteIfExists(ready);
    process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(Redirect.appendTo(log.toFile())).start();
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

  /** SIGKILL, as a crash or the OOM killer: nothing flushed, nothing written back. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor();
  }

  @Override
  public void close() throws Exception {
    if (process.isAlive()) {
      stop();
    }
  }
}
