package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A standalone Flink session cluster on loopback: a JobManager and a TaskManager, each a JVM of its
 * own on Flink's classpath (the job's provided dependencies), started as Flink's scripts start them,
 * and the job's shaded jar submitted with Flink's CLI. Either process can be killed with SIGKILL and
 * started again (the JobManager on the same ports, which the TaskManager reconnects to). Each start
 * writes {@code work/NAME-N.out} and {@code .log}.
 */
final class FlinkCluster implements AutoCloseable {
  static final Path STREAM_JOBS = Path.of(System.getProperty("wattgraph.streamJobsTarget", "../stream-jobs/target"));
  static final Path JAR = STREAM_JOBS.resolve("wattgraph-stream-jobs-0.1.0-SNAPSHOT-job.jar");
  private static final Pattern JOB_ID = Pattern.compile("JobID ([0-9a-f]{32})");

  final Path work;
  final int restPort;
  private final String classpath;
  private final Path conf;
  /** Each start by name, the live ones; a killed process leaves this map. */
  private final Map<String, Process> running = new LinkedHashMap<>();
  private final List<String> logs = new ArrayList<>();
  private Process jobManager;
  private Process taskManager;

  /**
   * Writes the configuration (Flink's keys, then {@code extraConfig} lines, which override) and
   * starts the JobManager and one TaskManager with 2 slots; returns once the slots are registered.
   */
  FlinkCluster(Path work, List<String> extraConfig) throws Exception {
    Path classpathFile = STREAM_JOBS.resolve("provided-classpath.txt");
    if (!Files.isRegularFile(JAR) || !Files.isRegularFile(classpathFile)) {
      fail("needs the packaged job (" + JAR + ", " + classpathFile + "): mvn -pl stream-jobs -am package");
    }
    this.work = Files.createDirectories(work);
    this.classpath = flinkClasspath(classpathFile);
    this.restPort = FlinkClusterEndToEndTest.freePort();
    this.conf = Files.createDirectories(work.resolve("conf"));
    Map<String, String> config = new LinkedHashMap<>();
    for (String line : List.of(
        "jobmanager.rpc.address: 127.0.0.1",
        "jobmanager.rpc.port: " + FlinkClusterEndToEndTest.freePort(),
        "jobmanager.bind-host: 127.0.0.1",
        "jobmanager.memory.process.size: 768m",
        "taskmanager.host: 127.0.0.1",
        "taskmanager.bind-host: 127.0.0.1",
        "taskmanager.numberOfTaskSlots: 2",
        "taskmanager.memory.process.size: 1200m",
        "rest.address: 127.0.0.1",
        "rest.bind-address: 127.0.0.1",
        "rest.port: " + restPort,
        "blob.server.port: " + FlinkClusterEndToEndTest.freePort(),
        "parallelism.default: 2",
        "io.tmp.dirs: " + Files.createDirectories(work.resolve("tmp")))) {
      put(config, line);
    }
    for (String line : extraConfig) {
      put(config, line);
    }
    StringBuilder yaml = new StringBuilder();
    config.forEach((k, v) -> yaml.append(k).append(": ").append(v).append('\n'));
    Files.writeString(conf.resolve("config.yaml"), yaml);
    Files.writeString(conf.resolve("log4j.properties"), String.join("\n",
        "rootLogger.level = INFO", "rootLogger.appenderRef.file.ref = file",
        "appender.file.type = File", "appender.file.name = file",
        "appender.file.fileName = ${sys:log.file}",
        "appender.file.layout.type = PatternLayout", "appender.file.layout.pattern = %d %-5p %c{1} - %m%n", ""));
    try {
      startJobManager();
      startTaskManager();
    } catch (Exception | AssertionError e) {
      close();
      throw e;
    }
  }

  /** A "key: value" line into the configuration; a later one replaces the earlier (YAML refuses duplicates). */
  private static void put(Map<String, String> config, String line) {
    int colon = line.indexOf(": ");
    config.put(line.substring(0, colon), line.substring(colon + 2));
  }

  String rest() {
    return "http://127.0.0.1:" + restPort;
  }

  /** The JobManager (again: same configuration and ports); returns once its REST API answers. */
  void startJobManager() throws Exception {
    jobManager = start("jobmanager", List.of("-Xmx512m"),
        "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", "--configDir", conf.toString());
    await(() -> !FlinkClusterEndToEndTest.get(rest() + "/overview").isEmpty(), "the JobManager's REST API");
  }

  /**
   * A TaskManager (its own RPC port each time), as taskmanager.sh starts it: memory and CPU computed
   * from the config by Flink's BashJavaUtils, JVM options first, the derived options as dynamic
   * properties. Returns once its 2 slots are registered.
   */
  void startTaskManager() throws Exception {
    List<String> tm = resourceParams();
    List<String> args = new ArrayList<>(List.of("--configDir", conf.toString(),
        "-D", "taskmanager.rpc.port=" + FlinkClusterEndToEndTest.freePort()));
    args.addAll(List.of(tm.get(1).trim().split("\\s+")));
    taskManager = start("taskmanager", List.of(tm.get(0).trim().split("\\s+")),
        "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", args.toArray(String[]::new));
    await(() -> FlinkClusterEndToEndTest.get(rest() + "/overview").contains("\"slots-total\":2"),
        "a TaskManager with 2 slots registered");
  }

  /** SIGKILL of the JobManager, as a crash or the OOM killer. */
  void killJobManager() throws InterruptedException {
    kill(jobManager);
  }

  /** SIGKILL of the TaskManager. */
  void killTaskManager() throws InterruptedException {
    kill(taskManager);
  }

  private void kill(Process p) throws InterruptedException {
    running.values().remove(p);
    p.destroyForcibly();
    p.waitFor();
  }

  /** {@code flink run -d JAR args} with Flink's CLI; the new job's id. */
  String submit(List<String> jobArgs) throws Exception {
    List<String> args = new ArrayList<>(List.of("run", "-d", "-m", "127.0.0.1:" + restPort, JAR.toString()));
    args.addAll(jobArgs);
    String name = next("submit");
    Process submit = flink(name, List.of("-Xmx512m"), "org.apache.flink.client.cli.CliFrontend", args.toArray(String[]::new));
    finish(submit, name);
    assertEquals(0, submit.exitValue(), "flink run: " + log(name));
    Matcher m = JOB_ID.matcher(Files.readString(work.resolve(name + ".out")));
    assertTrue(m.find(), "the CLI names the job's id: " + log(name));
    return m.group(1);
  }

  /** The TaskManager's JVM options and dynamic properties, as BashJavaUtils prints them for the scripts. */
  private List<String> resourceParams() throws Exception {
    String name = "bash-java-utils";
    Process p = flink(name, List.of("-Xmx512m"), "org.apache.flink.runtime.util.bash.BashJavaUtils",
        "GET_TM_RESOURCE_PARAMS", "--configDir", conf.toString());
    finish(p, name);
    String prefix = "BASH_JAVA_UTILS_EXEC_RESULT:";
    List<String> results = Files.readAllLines(work.resolve(name + ".out")).stream()
        .filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length())).toList();
    assertEquals(2, results.size(), "JVM options and dynamic properties: " + log(name));
    return results;
  }

  /** Waits at most 3 min for a short-lived process (killed then) to end. */
  private void finish(Process p, String name) throws InterruptedException {
    if (!p.waitFor(3, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      fail(name + " did not return within 3 min: " + log(name));
    }
  }

  /** A cluster process, numbered by its start ({@code jobmanager-2}), watched by {@link #await}. */
  private Process start(String kind, List<String> jvmOptions, String mainClass, String... args) throws IOException {
    String name = next(kind);
    Process p = flink(name, jvmOptions, mainClass, args);
    running.put(name, p);
    return p;
  }

  private String next(String kind) {
    return kind + "-" + (logs.stream().filter(n -> n.startsWith(kind + "-")).count() + 1);
  }

  /** A JVM of Flink's (its classpath and config directory), output to work/NAME.out, log to NAME.log. */
  private Process flink(String name, List<String> jvmOptions, String mainClass, String... args) throws IOException {
    logs.add(name);
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    cmd.addAll(jvmOptions);
    cmd.addAll(List.of("-Dlog.file=" + work.resolve(name + ".log"),
        "-Dlog4j.configurationFile=" + conf.resolve("log4j.properties").toUri(),
        "--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.lang=ALL-UNNAMED",
        "-cp", classpath, mainClass));
    cmd.addAll(List.of(args));
    ProcessBuilder b = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(work.resolve(name + ".out").toFile());
    b.environment().put("FLINK_CONF_DIR", conf.toString());
    return b.start();
  }

  /**
   * What a Flink distribution's lib/ holds: the job's provided dependencies (Flink, log4j), plus the
   * libraries of Flink's own that Maven resolved at compile scope because the job uses them too
   * (so they are listed with the job's runtime classpath, not the provided one).
   */
  static String flinkClasspath(Path providedClasspath) throws IOException {
    List<String> entries = new ArrayList<>(List.of(Files.readString(providedClasspath).trim().split(":")));
    List<String> flinksOwn = List.of("slf4j-api-", "commons-lang3-", "commons-io-", "commons-compress-",
        "commons-codec-", "snappy-java-", "lz4-java-");
    for (String e : Files.readString(providedClasspath.resolveSibling("runtime-classpath.txt")).trim().split(":")) {
      String name = Path.of(e).getFileName().toString();
      if (flinksOwn.stream().anyMatch(name::startsWith)) {
        entries.add(e);
      }
    }
    return String.join(":", entries);
  }

  /** Polls for at most 3 min; fails with the cluster's logs when a live process exits or on timeout. */
  void await(BooleanSupplier condition, String what) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (!condition.getAsBoolean()) {
      for (Map.Entry<String, Process> e : running.entrySet()) {
        if (!e.getValue().isAlive()) {
          fail(e.getKey() + " exited (" + e.getValue().exitValue() + ") while waiting for " + what + ": " + logs());
        }
      }
      if (System.nanoTime() > deadline) {
        fail("timed out waiting for " + what + ": " + logs());
      }
      Thread.sleep(250);
    }
  }

  /** The tails of every cluster process's output and log, for failure messages. */
  String logs() {
    StringBuilder s = new StringBuilder();
    for (String name : running.keySet()) {
      s.append(log(name));
    }
    return s.toString();
  }

  /** The log files of every start of {@code kind} (e.g. "taskmanager"), killed ones included. */
  List<Path> logFiles(String kind) {
    return logs.stream().filter(n -> n.startsWith(kind + "-")).map(n -> work.resolve(n + ".log")).toList();
  }

  /** The tail of a process's output and log. */
  String log(String name) {
    StringBuilder s = new StringBuilder();
    for (String suffix : List.of(".out", ".log")) {
      try {
        List<String> lines = Files.readAllLines(work.resolve(name + suffix));
        s.append("\n--- ").append(name).append(suffix).append(" (last 40 lines)\n")
            .append(String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size())));
      } catch (IOException e) {
        s.append("\n--- ").append(name).append(suffix).append(": ").append(e.getMessage());
      }
    }
    return s.toString();
  }

  /** Every live process stopped (SIGTERM, SIGKILL after 30 s). */
  @Override
  public void close() {
    List<Process> live = new ArrayList<>(running.values());
    running.clear();
    for (Process p : live) {
      p.destroy();
    }
    for (Process p : live) {
      try {
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          p.waitFor(30, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
