package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.Neo4jServer;
import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionRole;
import io.wattgraph.schema.AttributionWeight;
import io.wattgraph.schema.ContainerRuntime;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.PowerSource;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;

/**
 * The job on a real Flink cluster, not in the test's JVM: a
 * standalone session cluster (a JobManager and a TaskManager, each its own JVM, on Flink's own
 * classpath: the job's provided dependencies) and the job's shaded jar submitted with Flink's CLI,
 * flags only. Against local-stack's Kafka and Neo4j: both ends of a connection in, the exact edge
 * out. Needs the jar: runs after stream-jobs is packaged (the reactor's order); no root.
 */
class FlinkClusterEndToEndTest {
  static final Path STREAM_JOBS = Path.of(System.getProperty("wattgraph.streamJobsTarget", "../stream-jobs/target"));

  @Test
  void theShadedJobRunsOnAStandaloneClusterWithFlagsOnly() throws Exception {
    Path jar = STREAM_JOBS.resolve("wattgraph-stream-jobs-0.1.0-SNAPSHOT-job.jar");
    Path classpathFile = STREAM_JOBS.resolve("provided-classpath.txt");
    if (!Files.isRegularFile(jar) || !Files.isRegularFile(classpathFile)) {
      fail("needs the packaged job (" + jar + ", " + classpathFile + "): mvn -pl stream-jobs -am package");
    }
    String flinkClasspath = flinkClasspath(classpathFile);
    Path work = Files.createTempDirectory("wattgraph-flink-cluster");
    List<Process> processes = new ArrayList<>();
    try (KafkaBroker kafka = KafkaBroker.start(work.resolve("kafka"), 0, 0);
        Neo4jServer neo4j = Neo4jServer.start(work.resolve("neo4j"), 0);
        Driver driver = GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none())) {
      String topic = "wattgraph.connections";
      kafka.createTopic(topic, 2);
      kafka.createTopic("wattgraph.resources", 2);
      int restPort = freePort();
      Path conf = Files.createDirectories(work.resolve("conf"));
      Files.writeString(conf.resolve("config.yaml"), String.join("\n",
          "jobmanager.rpc.address: 127.0.0.1",
          "jobmanager.rpc.port: " + freePort(),
          "jobmanager.bind-host: 127.0.0.1",
          "jobmanager.memory.process.size: 768m",
          "taskmanager.host: 127.0.0.1",
          "taskmanager.bind-host: 127.0.0.1",
          "taskmanager.rpc.port: " + freePort(),
          "taskmanager.numberOfTaskSlots: 2",
          "taskmanager.memory.process.size: 1200m",
          "rest.address: 127.0.0.1",
          "rest.bind-address: 127.0.0.1",
          "rest.port: " + restPort,
          "blob.server.port: " + freePort(),
          "parallelism.default: 2",
          "io.tmp.dirs: " + Files.createDirectories(work.resolve("tmp")),
          ""));
      Files.writeString(conf.resolve("log4j.properties"), String.join("\n",
          "rootLogger.level = INFO", "rootLogger.appenderRef.file.ref = file",
          "appender.file.type = File", "appender.file.name = file",
          "appender.file.fileName = ${sys:log.file}",
          "appender.file.layout.type = PatternLayout", "appender.file.layout.pattern = %d %-5p %c{1} - %m%n", ""));
      processes.add(flink(flinkClasspath, conf, work, "jobmanager",
          "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", "--configDir", conf.toString()));
      // As taskmanager.sh starts it: memory and CPU computed from the config by Flink's BashJavaUtils,
      // JVM options first, the derived options as dynamic properties.
      List<String> tm = resourceParams(flinkClasspath, conf, work);
      List<String> tmArgs = new ArrayList<>(List.of("--configDir", conf.toString()));
      tmArgs.addAll(List.of(tm.get(1).trim().split("\\s+")));
      processes.add(flink(flinkClasspath, conf, work, "taskmanager", List.of(tm.get(0).trim().split("\\s+")),
          "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", tmArgs.toArray(String[]::new)));
      String rest = "http://127.0.0.1:" + restPort;
      await(() -> get(rest + "/overview").contains("\"slots-total\":2"), "a TaskManager with 2 slots registered",
          work, processes);

      // The job's jar and flags, nothing else: what the k8s manifest passes.
      Process submit = flink(flinkClasspath, conf, work, "submit", "org.apache.flink.client.cli.CliFrontend",
          "run", "-d", "-m", "127.0.0.1:" + restPort, jar.toString(),
          "--kafka-brokers", kafka.bootstrapServers(), "--topic", topic, "--group-id", "cluster-test",
          "--neo4j-uri", neo4j.boltUri(), "--checkpoint-dir", work.resolve("checkpoints").toUri().toString(),
          "--checkpoint-interval-ms", "1000", "--parallelism", "2", "--idleness-ms", "1000");
      assertTrue(submit.waitFor(3, TimeUnit.MINUTES), "the CLI returns (detached)");
      assertEquals(0, submit.exitValue(), "flink run: " + log(work, "submit"));
      await(() -> get(rest + "/jobs/overview").contains("\"state\":\"RUNNING\""), "the job RUNNING", work, processes);

      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      p.put(ProducerConfig.ACKS_CONFIG, "all");
      try (KafkaProducer<String, byte[]> producer =
          new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
        for (ConnectionEvent e : List.of(
            event("host-a", 100, ConnectionRole.CLIENT, "10.9.0.1", 40000, "10.9.0.2", 8080, 300, 4000, 11),
            event("host-b", 200, ConnectionRole.SERVER, "10.9.0.2", 8080, "10.9.0.1", 40000, 4000, 300, 22))) {
          producer.send(new ProducerRecord<>(topic, e.getHostId().toString(), e.toByteBuffer().array())).get();
        }
        // The windows too: host-a's HOST samples, 2 CPU s and 30 J in [T0, T0 + 10 s), then one
        // 30 s later that moves the watermark past that window.
        long t0 = 1_700_000_000_000_000_000L;
        for (ResourceSample r : List.of(hostSample(t0 + 5_000_000_000L, 2_000_000_000L, 30.0),
            hostSample(t0 + 30_000_000_000L, 1_000_000_000L, 10.0))) {
          producer.send(new ProducerRecord<>("wattgraph.resources", "host-a", r.toByteBuffer().array())).get();
        }
      }
      await(() -> driver.executableQuery("MATCH (h:Host {id: 'host-a'}) WHERE h.metricsWindowEndNs = $end "
          + "AND h.cpuUsage = 0.2 AND h.powerW = 3.0 RETURN count(h)").withParameters(
              Map.of("end", 1_700_000_010_000_000_000L)).execute().records().get(0).get(0).asLong() == 1,
          "host-a's first window in the graph: 0.2 cores, 3 W", work, processes);
      String edge = "MATCH (:Process {id: 'host-a/100/1000'})-[t:TALKS_TO]->(:Process {id: 'host-b/200/2000'}) "
          + "RETURN coalesce(max(t.connections * 1000000000 + t.bytesClientToServer * 100000 + t.bytesServerToClient), 0)";
      await(() -> driver.executableQuery(edge).execute().records().get(0).get(0).asLong() == 1_030_004_000L,
          "the edge host-a/100 -> host-b/200 with 1 connection, 300 and 4000 bytes", work, processes);
    } finally {
      for (Process proc : processes) {
        proc.destroy();
      }
      for (Process proc : processes) {
        if (!proc.waitFor(30, TimeUnit.SECONDS)) {
          proc.destroyForcibly();
        }
      }
    }
  }

  static ResourceSample hostSample(long endNs, long cpuNs, double energyJ) {
    return ResourceSample.newBuilder()
        .setScope(ResourceScope.HOST)
        .setHostId("host-a")
        .setIntervalStartNs(endNs - 5_000_000_000L)
        .setIntervalEndNs(endNs)
        .setTgid(0)
        .setProcessStartTimeNs(0)
        .setComm("")
        .setCgroupId(0)
        .setGroupId("host")
        .setRuntime(ContainerRuntime.HOST)
        .setThreads(8)
        .setProcesses(3)
        .setCpuTimeNs(cpuNs)
        .setWeightKind(AttributionWeight.CPU_TIME)
        .setWeight(cpuNs)
        .setPowerSource(PowerSource.MEASURED)
        .setPowerWatts(energyJ / 5)
        .setEnergyJoules(energyJ)
        .setIdlePowerWatts(0)
        .setUnattributedPowerWatts(0)
        .build();
  }

  static ConnectionEvent event(String host, int tgid, ConnectionRole role, String localIp, int localPort,
      String remoteIp, int remotePort, long sent, long received, long cookie) {
    return ConnectionEvent.newBuilder()
        .setKind(ConnectionEventKind.SNAPSHOT)
        .setHostId(host)
        .setEventTimeNs(1_000_000_000L)
        .setLocalAddress(IpAddresses.parse(localIp))
        .setLocalPort(localPort)
        .setRemoteAddress(IpAddresses.parse(remoteIp))
        .setRemotePort(remotePort)
        .setRole(role)
        .setPid(tgid)
        .setTgid(tgid)
        .setProcessStartTimeNs(tgid * 10L)
        .setComm("proc" + tgid)
        .setCmdline(null)
        .setContainerId(null)
        .setCgroupId(1)
        .setNetnsInode(1)
        .setSocketCookie(cookie)
        .setBytesSent(sent)
        .setBytesReceived(received)
        .build();
  }

  /** The TaskManager's JVM options and dynamic properties, as BashJavaUtils prints them for the scripts. */
  static List<String> resourceParams(String classpath, Path conf, Path work) throws Exception {
    Process p = flink(classpath, conf, work, "bash-java-utils", "org.apache.flink.runtime.util.bash.BashJavaUtils",
        "GET_TM_RESOURCE_PARAMS", "--configDir", conf.toString());
    assertTrue(p.waitFor(2, TimeUnit.MINUTES), "BashJavaUtils returns");
    String prefix = "BASH_JAVA_UTILS_EXEC_RESULT:";
    List<String> results = Files.readAllLines(work.resolve("bash-java-utils.out")).stream()
        .filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length())).toList();
    assertEquals(2, results.size(), "JVM options and dynamic properties: " + log(work, "bash-java-utils"));
    return results;
  }

  /** A JVM of Flink's (its own classpath and config directory), output to work/NAME.out. */
  static Process flink(String classpath, Path conf, Path work, String name, String mainClass, String... args)
      throws IOException {
    return flink(classpath, conf, work, name, List.of("-Xmx512m"), mainClass, args);
  }

  static Process flink(String classpath, Path conf, Path work, String name, List<String> jvmOptions, String mainClass,
      String... args) throws IOException {
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

  static String get(String url) {
    try {
      HttpResponse<String> r = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
          HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 ? r.body() : "";
    } catch (IOException e) {
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  static void await(BooleanSupplier condition, String what, Path work, List<Process> processes) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (!condition.getAsBoolean()) {
      for (Process proc : processes) {
        if (!proc.isAlive()) {
          fail("a Flink process exited (" + proc.exitValue() + ") while waiting for " + what + ": "
              + log(work, "jobmanager") + log(work, "taskmanager"));
        }
      }
      if (System.nanoTime() > deadline) {
        fail("timed out waiting for " + what + ": " + log(work, "jobmanager") + log(work, "taskmanager"));
      }
      Thread.sleep(250);
    }
  }

  /** The tail of a process's output and log, for failure messages. */
  static String log(Path work, String name) {
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

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
