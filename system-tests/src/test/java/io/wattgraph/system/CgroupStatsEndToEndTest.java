package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.schema.CgroupStats;
import io.wattgraph.schema.WattgraphSchemas;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;

/**
 * High-frequency cgroup samples through a real Kafka broker: a busy process in a container-like
 * cgroup this test creates (v1 controllers on this hybrid host, else v2), sampled every 10 ms by the
 * real agent; its CgroupStats records, decoded with the shared schema, must name the container, join
 * up interval to interval, and carry the process's CPU time.
 */
class CgroupStatsEndToEndTest {
  private static final String TOPIC = "wattgraph.cgroups";
  private static final String ID = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff";
  private static final Path WORK = Path.of("target", "system-test-cgroups").toAbsolutePath();

  /** The container cgroup's directories, one per controller hierarchy (v1) or one (v2). */
  private static List<Path> controllerDirs(String rel) {
    Path v1 = Path.of("/sys/fs/cgroup");
    List<Path> dirs = new ArrayList<>();
    if (Files.isDirectory(v1.resolve("cpuacct")) && !v2HasCpu()) {
      for (String c : List.of("cpuacct", "cpu", "memory", "blkio", "pids")) {
        if (Files.isDirectory(v1.resolve(c))) {
          dirs.add(v1.resolve(c).resolve(rel));
        }
      }
    } else {
      dirs.add(v2Root().resolve(rel));
    }
    return dirs;
  }

  private static Path v2Root() {
    Path hybrid = Path.of("/sys/fs/cgroup/unified");
    return Files.exists(hybrid.resolve("cgroup.procs")) ? hybrid : Path.of("/sys/fs/cgroup");
  }

  private static boolean v2HasCpu() {
    try {
      return List.of(Files.readString(v2Root().resolve("cgroup.controllers")).trim().split("\\s+")).contains("cpu");
    } catch (Exception e) {
      return false;
    }
  }

  @Test
  void busyContainerCgroupReachesKafkaWithItsCpuTime() throws Exception {
    Preconditions.requireRoot();
    Files.createDirectories(WORK);
    String parent = "wattgraph-st-" + ProcessHandle.current().pid();
    String rel = parent + "/docker-" + ID + ".scope";
    List<Path> created = new ArrayList<>();
    Process busy = null;
    try (KafkaBroker kafka = KafkaBroker.start(WORK.resolve("kafka-" + System.nanoTime()), 0, 0)) {
      kafka.createTopic(TOPIC, 1);
      kafka.createTopic("wattgraph.connections", 1);
      boolean v2 = controllerDirs(parent).size() == 1;
      if (v2) {
        enableControllers(v2Root());
      }
      for (Path d : controllerDirs(parent)) {
        Files.createDirectories(d);
        created.add(d);
        if (v2) {
          enableControllers(d);
        }
      }
      for (Path d : controllerDirs(rel)) {
        Files.createDirectories(d);
        created.add(d);
      }
      busy = new ProcessBuilder("/bin/sh", "-c", "while :; do :; done").start();
      for (Path d : controllerDirs(rel)) {
        Files.writeString(d.resolve("cgroup.procs"), String.valueOf(busy.pid()), StandardCharsets.US_ASCII);
      }
      try (AgentProcess agent = new AgentProcess(Preconditions.agentBinary(), "cg-host", Path.of("/proc/self/ns/net"),
          kafka.bootstrapServers(), WORK.resolve("agents"), List.of("--no-resources", "--no-transactions",
              "--cgroup-sample-interval-ms", "10", "--sample-interval-ms", "500"))) {
        List<CgroupStats> mine = awaitRecords(kafka.bootstrapServers(), 4, agent);
        long cpu = 0;
        for (int i = 0; i < mine.size(); i++) {
          CgroupStats r = mine.get(i);
          assertEquals("cg-host", r.getHostId());
          assertEquals("DOCKER", r.getRuntime());
          assertEquals("/" + rel, r.getCgroupPath());
          assertEquals(10_000_000L, r.getTickIntervalNs());
          assertTrue(r.getTicks() > 0, "ticks in " + r);
          assertTrue(r.getPids() >= 1, "the busy process is in the cgroup: " + r);
          if (i > 0) {
            assertEquals(mine.get(i - 1).getIntervalEndNs(), r.getIntervalStartNs(), "intervals join up");
          }
          cpu += r.getCpuNs();
        }
        // A busy loop: CPU time in every interval, and at the peak close to a whole core.
        assertTrue(mine.stream().allMatch(r -> r.getCpuNs() > 0), "CPU in every interval: " + mine);
        assertTrue(cpu > 0);
        assertTrue(mine.stream().anyMatch(r -> r.getCpuPeakCores() > 0.5), "a busy process peaks near one core: " + mine);
      }
    } finally {
      if (busy != null) {
        busy.destroyForcibly();
        busy.waitFor(10, TimeUnit.SECONDS);
      }
      for (int i = created.size() - 1; i >= 0; i--) {
        for (int attempt = 0; attempt < 50 && Files.exists(created.get(i)); attempt++) {
          try {
            Files.delete(created.get(i));
          } catch (Exception e) {
            Thread.sleep(20);
          }
        }
      }
    }
  }

  /** v2: lets the children of {@code dir} use the cpu, memory and pids controllers (best effort). */
  private static void enableControllers(Path dir) {
    try {
      Files.writeString(dir.resolve("cgroup.subtree_control"), "+cpu +memory +pids");
    } catch (Exception e) {
      System.err.println("cgroup.subtree_control of " + dir + ": " + e);
    }
  }

  /** This container's records in topic order, once there are {@code n} of them. */
  private static List<CgroupStats> awaitRecords(String bootstrap, int n, AgentProcess agent) throws Exception {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    var decoder = WattgraphSchemas.cgroupStatsDecoder();
    List<CgroupStats> mine = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition tp = new TopicPartition(TOPIC, 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (mine.size() < n) {
        assertTrue(System.nanoTime() < deadline, "only " + mine.size() + " CgroupStats records for the container; agent log:\n"
            + agent.logText());
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          assertEquals("cg-host", new String(r.key(), StandardCharsets.UTF_8), "record key = host id");
          CgroupStats s = decoder.decode(r.value());
          if (ID.equals(s.getGroupId())) {
            mine.add(s);
          }
        }
      }
    }
    return mine;
  }
}
