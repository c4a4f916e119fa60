package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

class JobConfigTest {
  static final String[] MIN = {"--kafka-brokers", "127.0.0.1:9092", "--neo4j-uri", "bolt://127.0.0.1:7687"};

  @Test
  void defaults() {
    JobConfig c = JobConfig.parse(MIN);
    assertEquals("wattgraph.connections", c.topic);
    assertEquals(3000, c.pairingHorizonMs);
    assertEquals(5000, c.checkpointIntervalMs);
    assertNull(c.neo4jUser);
    assertNull(c.parallelism);
    assertNull(c.checkpointDir);
    assertEquals("wattgraph.dlq", c.dlqTopic);
    assertEquals("wattgraph.service-mappings", c.serviceMappingsTopic);
    assertEquals(6000, c.closedRetention(), "2 x horizon");
    assertEquals(3_600_000, c.idleTimeoutMs);
    assertEquals(2000, c.sinkBatchSize);
    assertEquals(2000, c.neo4j().batchSize);
    assertEquals(5000, JobConfig.parse(concat("--sink-batch-size", "5000")).neo4j().batchSize);
  }

  @Test
  void latencySharesCoverTheLatenessAndACheckpointInterval() {
    assertEquals(32, JobConfig.parse(MIN).latencyShareWindows(), "(300 s + 5 s) / 10 s, rounded up, + 1");
    assertEquals(2, JobConfig.parse(concat("--allowed-lateness-ms", "0", "--checkpoint-interval-ms", "1000",
        "--window-ms", "1000")).latencyShareWindows(), "the window and one newer");
    assertEquals(JobConfig.MAX_LATENCY_SHARE_WINDOWS, JobConfig.parse(concat("--allowed-lateness-ms", "86400000",
        "--window-ms", "1000")).latencyShareWindows());
  }

  @Test
  void sheddingPeerMemoryFlag() {
    assertEquals(600_000, JobConfig.parse(MIN).sheddingPeerMemoryMs);
    assertEquals(0, JobConfig.parse(concat("--shedding-peer-memory-ms", "0")).sheddingPeerMemoryMs);
    assertEquals(60_000, JobConfig.parse(concat("--shedding-peer-memory-ms", "60000")).sheddingPeerMemoryMs);
    for (String bad : new String[] {"-1", "ten"}) {
      assertEquals("--shedding-peer-memory-ms must be an integer >= 0, got '" + bad + "'",
          assertThrows(IllegalArgumentException.class,
              () -> JobConfig.parse(concat("--shedding-peer-memory-ms", bad))).getMessage());
    }
    assertTrue(JobConfig.USAGE.contains("--shedding-peer-memory-ms"));
  }

  @Test
  void topicAndStateFlags() {
    JobConfig c = JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2",
        "--dlq-topic", "d", "--service-mappings-topic", "m", "--closed-retention-ms", "7",
        "--idle-timeout-ms", "8", "--duplicate-horizon-ms", "0"});
    assertEquals(0, c.duplicateHorizonMs);
    assertEquals(300_000, JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2"})
        .duplicateHorizonMs);
    assertTrue(assertThrows(IllegalArgumentException.class, () -> JobConfig.parse(new String[] {
        "--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2", "--duplicate-horizon-ms", "-1"})).getMessage()
        .contains("--duplicate-horizon-ms"));
    assertEquals("d", c.dlqTopic);
    assertEquals("m", c.serviceMappingsTopic);
    assertEquals(7, c.closedRetention());
    assertEquals(8, c.idleTimeoutMs);
    assertTrue(assertThrows(IllegalArgumentException.class, () -> JobConfig.parse(new String[] {
        "--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2", "--idle-timeout-ms", "0"})).getMessage()
        .contains("--idle-timeout-ms"));
  }

  @Test
  void allFlags() {
    JobConfig c = JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "neo4j://n:2",
        "--topic", "t", "--group-id", "g", "--neo4j-user", "u", "--neo4j-password", "p",
        "--pairing-horizon-ms", "10", "--checkpoint-interval-ms", "20", "--checkpoint-dir", "file:///x",
        "--parallelism", "3"});
    assertEquals("t", c.topic);
    assertEquals("g", c.groupId);
    assertEquals("u", c.neo4jUser);
    assertEquals(10, c.pairingHorizonMs);
    assertEquals(20, c.checkpointIntervalMs);
    assertEquals("file:///x", c.checkpointDir);
    assertEquals(3, c.parallelism);
    assertTrue(c.neo4j().toString().contains("n:2"));
  }

  static String error(String... args) {
    return assertThrows(IllegalArgumentException.class, () -> JobConfig.parse(args)).getMessage();
  }

  @Test
  void errorsNameTheFlag() {
    assertTrue(error("--neo4j-uri", "bolt://x:1").contains("--kafka-brokers"));
    assertTrue(error("--kafka-brokers", "k:1").contains("--neo4j-uri"));
    assertTrue(error(concat("--pairing-horizon-ms", "soon")).contains("--pairing-horizon-ms"));
    assertTrue(error(concat("--checkpoint-interval-ms", "0")).contains("--checkpoint-interval-ms"));
    assertTrue(error(concat("--checkpoint-timeout-ms", "600000")).contains(
        "--checkpoint-interval-ms + --checkpoint-timeout-ms (5000 + 600000) must be below the Kafka sinks' transaction.timeout.ms (600000)"));
    assertTrue(error(concat("--parallelism", "-1")).contains("--parallelism"));
    assertTrue(error(concat("--sink-batch-size", "0")).contains("--sink-batch-size"));
    assertTrue(error(concat("--sink-batch-size", "50001")).contains("--sink-batch-size must be at most 50000"));
    assertTrue(error(concat("--bogus", "1")).contains("--bogus"));
    assertTrue(error(concat("--neo4j-user", "u")).contains("--neo4j-password"));
    assertTrue(error("--kafka-brokers", "k:1", "--neo4j-uri", "http://x").contains("--neo4j-uri"));
    assertTrue(error("--kafka-brokers").contains("--kafka-brokers needs a value"));
  }

  /** MIN and {@code flagsAndValues}. */
  static String[] concat(String... flagsAndValues) {
    String[] r = java.util.Arrays.copyOf(MIN, MIN.length + flagsAndValues.length);
    System.arraycopy(flagsAndValues, 0, r, MIN.length, flagsAndValues.length);
    return r;
  }

  @Test
  void metricsFlags() {
    JobConfig d = JobConfig.parse(MIN);
    assertEquals("wattgraph.resources", d.resourcesTopic);
    assertEquals("wattgraph.metrics", d.metricsTopic);
    assertEquals(10_000, d.windowMs);
    assertEquals(300_000, d.allowedLatenessMs);
    assertEquals(5_000, d.maxOutOfOrdernessMs);
    assertEquals(15_000, d.idlenessMs);
    JobConfig c = JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2",
        "--resources-topic", "r", "--metrics-topic", "m", "--window-ms", "60000", "--allowed-lateness-ms", "0",
        "--max-out-of-orderness-ms", "0", "--idleness-ms", "1000"});
    assertEquals("r", c.resourcesTopic);
    assertEquals("m", c.metricsTopic);
    assertEquals(60_000, c.windowMs);
    assertEquals(0, c.allowedLatenessMs);
    assertEquals(0, c.maxOutOfOrdernessMs);
    assertEquals(1000, c.idlenessMs);
    for (String[] bad : new String[][] {{"--window-ms", "0"}, {"--allowed-lateness-ms", "-1"},
        {"--max-out-of-orderness-ms", "x"}, {"--idleness-ms", "0"}, {"--metrics-topic", " "},
        {"--resources-topic", "wattgraph.connections"}}) {
      String message = assertThrows(IllegalArgumentException.class, () -> JobConfig.parse(new String[] {
          "--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2", bad[0], bad[1]})).getMessage();
      assertTrue(message.contains(bad[0]), message);
    }
    assertTrue(JobConfig.USAGE.contains("--idleness-ms"));
  }

  @Test
  void transactionTopics() {
    JobConfig d = JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2"});
    assertEquals("wattgraph.transactions", d.transactionsTopic);
    assertEquals("wattgraph.edge-metrics", d.edgeMetricsTopic);
    JobConfig c = JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2",
        "--transactions-topic", "t", "--edge-metrics-topic", "e"});
    assertEquals("t", c.transactionsTopic);
    assertEquals("e", c.edgeMetricsTopic);
    for (String[] bad : new String[][] {{"--transactions-topic", "wattgraph.resources"},
        {"--edge-metrics-topic", "wattgraph.metrics"}, {"--edge-metrics-topic", ""}}) {
      String message = assertThrows(IllegalArgumentException.class, () -> JobConfig.parse(new String[] {
          "--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2", bad[0], bad[1]})).getMessage();
      assertTrue(message.contains(bad[0]), message);
    }
    assertTrue(JobConfig.USAGE.contains("--edge-metrics-topic"));
  }

  @Test
  void namespaceMetricsTopic() {
    assertEquals("wattgraph.namespace-metrics", JobConfig.parse(MIN).namespaceMetricsTopic);
    JobConfig c = JobConfig.parse(new String[] {"--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2",
        "--namespace-metrics-topic", "ns"});
    assertEquals("ns", c.namespaceMetricsTopic);
    for (String[] bad : new String[][] {{"--namespace-metrics-topic", "wattgraph.metrics"},
        {"--namespace-metrics-topic", "wattgraph.edge-metrics"}, {"--namespace-metrics-topic", ""}}) {
      String message = assertThrows(IllegalArgumentException.class, () -> JobConfig.parse(new String[] {
          "--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2", bad[0], bad[1]})).getMessage();
      assertTrue(message.contains(bad[0]), message);
    }
    assertTrue(JobConfig.USAGE.contains("--namespace-metrics-topic"));
  }

  @Test
  void maxHttpRoutes() {
    assertEquals(100, JobConfig.parse(MIN).maxHttpRoutes);
    assertEquals(1, JobConfig.parse(concat("--max-http-routes", "1")).maxHttpRoutes);
    assertEquals(10_000, JobConfig.parse(concat("--max-http-routes", "10000")).maxHttpRoutes);
    assertEquals("--max-http-routes must be a positive integer, got '0'", error(concat("--max-http-routes", "0")));
    assertEquals("--max-http-routes must be a positive integer, got 'many'", error(concat("--max-http-routes", "many")));
    assertEquals("--max-http-routes must be at most 10000, got 10001", error(concat("--max-http-routes", "10001")));
    assertTrue(JobConfig.USAGE.contains("--max-http-routes"));
  }

  @Test
  void historyWindows() {
    assertEquals(360, JobConfig.parse(MIN).historyWindows);
    assertEquals(0, JobConfig.parse(concat("--history-windows", "0")).historyWindows);
    assertEquals(8640, JobConfig.parse(concat("--history-windows", "8640")).historyWindows);
    assertEquals("--history-windows must be an integer >= 0, got '-1'", error(concat("--history-windows", "-1")));
    assertEquals("--history-windows must be an integer >= 0, got 'all'", error(concat("--history-windows", "all")));
    assertEquals("--history-windows must be at most 8640, got 8641", error(concat("--history-windows", "8641")));
    assertTrue(JobConfig.USAGE.contains("--history-windows"));
  }

  /**
   * The README's options table is JobConfig: one row per option, flag, value and default as
   * {@link JobConfig#OPTIONS} has them (--help is made from those), one row per other public field
   * ("in-process only") with its initial value; and no field of JobConfig is left out.
   */
  @Test
  void theReadmeOptionsTableIsJobConfig() throws Exception {
    Map<String, String> rows = readmeOptions();
    Map<String, String> expected = new TreeMap<>();
    Set<String> fields = new TreeSet<>();
    for (JobConfig.Option o : JobConfig.OPTIONS) {
      expected.put(o.flag() + " " + o.value(), o.byDefault());
      fields.add(o.field());
    }
    JobConfig initial = new JobConfig();
    for (Field f : publicFields()) {
      if (!fields.contains(f.getName())) {
        expected.put(f.getName() + " (in-process only)", String.valueOf(f.get(initial)));
      }
      fields.remove(f.getName());
    }
    assertEquals(Set.of(), fields, "options naming no field of JobConfig");
    assertEquals(expected, rows, "README.md's options table (first column: option, second: default)");
  }

  /** A default the table gives as a value is the one the job takes when the flag is left out. */
  @Test
  void documentedDefaultsAreTheDefaults() throws Exception {
    JobConfig without = JobConfig.parse(MIN);
    int checked = 0;
    for (JobConfig.Option o : JobConfig.OPTIONS) {
      String d = o.byDefault();
      if (Set.of("required", "none", "the environment's").contains(d) || d.contains(" x ")) {
        continue;
      }
      JobConfig with = JobConfig.parse(concat(o.flag(), d));
      for (Field f : publicFields()) {
        assertEquals(f.get(without), f.get(with), o.flag() + " " + d + " changes " + f.getName());
      }
      checked++;
    }
    assertEquals(25, checked, "options with a value as default");
    assertEquals(2 * without.pairingHorizonMs, without.closedRetention(), "2 x --pairing-horizon-ms");
    assertEquals(JobConfig.TRANSACTION_TIMEOUT_MS / 2, without.checkpointTimeout(), "0.5 x transaction.timeout.ms");
    assertNull(without.parallelism, "the environment's");
  }

  /** First and second column of each row of the README's "## Options" table, backticks and escapes removed. */
  static Map<String, String> readmeOptions() throws Exception {
    String readme = Files.readString(Path.of("README.md"));
    String section = readme.substring(readme.indexOf("\n## Options\n"));
    section = section.substring(0, section.indexOf("\n## ", 1));
    Map<String, String> rows = new TreeMap<>();
    for (String line : section.split("\n")) {
      if (!line.startsWith("| `")) {
        continue;
      }
      String[] cells = line.replace("\\|", "\u0000").split("\\|");
      String option = cells[1].replace("`", "").replace('\u0000', '|').trim();
      String byDefault = cells[2].replace("`", "").replace('\u0000', '|').trim();
      assertNull(rows.put(option, byDefault), "twice in the table: " + option);
    }
    return rows;
  }

  static List<Field> publicFields() {
    List<Field> l = new ArrayList<>();
    for (Field f : JobConfig.class.getFields()) {
      if (!Modifier.isStatic(f.getModifiers())) {
        l.add(f);
      }
    }
    return l;
  }
}
