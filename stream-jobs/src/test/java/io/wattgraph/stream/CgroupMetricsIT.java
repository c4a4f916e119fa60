package io.wattgraph.stream;

import static io.wattgraph.stream.source.CgroupRecords.MIB;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.CgroupStats;
import io.wattgraph.stream.sink.kafka.DeadLetterSerializer;
import io.wattgraph.stream.source.CgroupRecords;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.Value;

/**
 * The agents' CgroupStats through the whole job against real Kafka and Neo4j (local-stack): the
 * container windows' figures on the Container nodes and in their history, exactly; bad records in
 * the shared DLQ; a second run over the same input (a replay) leaves the graph as it was.
 */
class CgroupMetricsIT {
  static final long S = 1_000_000_000L;
  /** A window boundary, ns. */
  static final long T0 = 1_700_000_000_000_000_000L;
  static final String C1 = "a1".repeat(32);
  static final String C2 = "b2".repeat(32);

  static StreamJobHarness stack;

  @BeforeAll
  static void startStack() throws Exception {
    stack = StreamJobHarness.start("cgroups");
  }

  @AfterAll
  static void stopStack() {
    if (stack != null) {
      stack.close();
    }
  }

  static JobConfig config(String group) {
    JobConfig c = StreamJobHarness.withTopics(stack.config(group), "cg");
    c.bounded = true;
    c.parallelism = 2;
    c.checkpointIntervalMs = 500;
    c.historyWindows = 3;
    return c;
  }

  static void run(String group) throws Exception {
    StreamExecutionEnvironment env = StreamJobHarness.environment(false);
    CorrelationJob.build(env, config(group));
    StreamJobHarness.runToEnd(env, "cgroups-it-" + group);
  }

  static ProducerRecord<String, byte[]> record(int partition, CgroupStats s) {
    return new ProducerRecord<>("cg.cgroups", partition, s.getHostId(), CgroupRecords.encode(s));
  }

  @Test
  void containerWindowsOnTheGraphExactlyAndAReplayChangesNothing() throws Exception {
    stack.kafka.createTopic("cg.cgroups", 2);
    stack.createTopics(1, "cg.connections", "cg.metrics", "cg.namespace-metrics", "cg.edge-metrics", "cg.dlq");
    List<ProducerRecord<String, byte[]>> records = new ArrayList<>();
    // host-a, partition 0: C1 over window w0 = [T0, T0+10 s) in two records (one sent twice: a
    // replay of the agent's spool), and one record in w1 = [T0+10 s, T0+20 s).
    CgroupStats a = CgroupRecords.stats("host-a", C1, T0, T0 + 5 * S).setCpuNs(2 * S).setCpuPeakCores(1.5)
        .setThrottledPeriods(3).setThrottledNs(250_000_000L).setMemoryBytes(300 * MIB).setMemoryPeakBytes(400 * MIB)
        .setIoReadBytes(4096).setIoWriteBytes(8192).setPids(7).setTicks(50).setMaxTickGapNs(12_000_000L)
        .setPodUid("11111111-2222-3333-4444-555555555555").setPodName("shop-0").setPodNamespace("shop")
        .setPodLabels(Map.of("app", "shop")).setCpuRequestCores(0.25).setMemoryRequestBytes(128 * MIB).build();
    CgroupStats b = CgroupRecords.stats("host-a", C1, T0 + 5 * S, T0 + 10 * S).setCpuNs(3 * S).setCpuPeakCores(2.25)
        .setThrottledPeriods(5).setThrottledNs(500_000_000L).setMemoryBytes(200 * MIB).setMemoryPeakBytes(350 * MIB)
        .setIoReadBytes(1000).setPids(9).setTicks(50).setMaxTickGapNs(30_000_000L).build();
    CgroupStats c = CgroupRecords.stats("host-a", C1, T0 + 10 * S, T0 + 20 * S).setCpuNs(S).setCpuPeakCores(0.5)
        .setMemoryBytes(100 * MIB).setMemoryPeakBytes(120 * MIB).setIoWriteBytes(512).setPids(4).setTicks(100)
        .setMaxTickGapNs(10_000_000L).build();
    for (CgroupStats s : List.of(a, b, b, c)) {
      records.add(record(0, s));
    }
    // host-b, partition 1: C2 over w0 only; then an invalid record and undecodable bytes.
    // C2's pod is known but it has no requests.
    records.add(record(1, CgroupRecords.stats("host-b", C2, T0, T0 + 10 * S).setCpuNs(S / 4).setCpuPeakCores(0.125)
        .setMemoryBytes(64 * MIB).setMemoryPeakBytes(64 * MIB).setTicks(100).setMaxTickGapNs(10_000_000L)
        .setPodUid("22222222-3333-4444-5555-666666666666").setPodName("db-0").setPodNamespace("shop").build()));
    records.add(record(1, CgroupRecords.stats("host-b", C2, T0 + 10 * S, T0 + 20 * S).setMemoryBytes(-5).build()));
    records.add(new ProducerRecord<>("cg.cgroups", 1, "host-b", new byte[] {(byte) 0xC3, 0x01, 9}));
    records.add(record(1, CgroupRecords.stats("host-b", C2, T0 + 10 * S, T0 + 20 * S).setCpuRequestCores(-1.0).build()));
    stack.produce(records);

    run("cgroups-1");

    Value c1 = stack.single("MATCH (n:Container {id: $id})-[:RUNS_ON]->(:Host {id: 'host-a'}) RETURN n",
        Map.of("id", C1)).get(0);
    // The latest window, w1.
    assertEquals(T0 + 10 * S, c1.get("cgroupWindowStartNs").asLong());
    assertEquals(T0 + 20 * S, c1.get("cgroupWindowEndNs").asLong());
    assertEquals(0, c1.get("cgroupRevision").asInt());
    assertEquals(0.1, c1.get("cpuMeanCores").asDouble());
    assertEquals(0.5, c1.get("cpuPeakCores").asDouble());
    assertEquals(0.0, c1.get("throttledS").asDouble());
    assertEquals(0, c1.get("throttledPeriods").asLong());
    assertEquals(120 * MIB, c1.get("memoryBytes").asLong());
    assertEquals(100 * MIB, c1.get("memoryLastBytes").asLong());
    assertEquals(100.0 * MIB, c1.get("memoryMeanBytes").asDouble());
    assertEquals(0, c1.get("ioReadBytes").asLong());
    assertEquals(512, c1.get("ioWriteBytes").asLong());
    assertEquals(4, c1.get("pids").asLong());
    assertEquals(100, c1.get("cgroupTicks").asLong());
    assertEquals(10_000_000L, c1.get("cgroupMaxTickGapNs").asLong());
    assertEquals("11111111-2222-3333-4444-555555555555", c1.get("podUid").asString(), "kept from w0");
    assertEquals("shop-0", c1.get("podName").asString());
    assertEquals("shop", c1.get("podNamespace").asString());
    assertEquals(List.of("app=shop"), c1.get("podLabels").asList());
    // The Kubernetes requests, from w0's record with pod metadata; w1's has none and keeps them.
    assertEquals(0.25, c1.get("cpuRequest").asDouble());
    assertEquals(128 * MIB, c1.get("memoryRequestBytes").asLong());
    // The history: w0 (the duplicate counted once) and w1.
    assertEquals(List.of(T0 + 10 * S, T0 + 20 * S), c1.get("historyCgroupWindowEndNs").asList());
    assertEquals(List.of(0L, 0L), c1.get("historyCgroupRevision").asList());
    assertEquals(List.of(400.0 * MIB, 120.0 * MIB), c1.get("historyMemoryBytes").asList());
    assertEquals(List.of(2.25, 0.5), c1.get("historyCpuPeakCores").asList());
    assertEquals(List.of(0.75, 0.0), c1.get("historyThrottledS").asList());

    Value c2 = stack.single("MATCH (n:Container {id: $id})-[:RUNS_ON]->(:Host {id: 'host-b'}) RETURN n",
        Map.of("id", C2)).get(0);
    assertEquals(T0 + 10 * S, c2.get("cgroupWindowEndNs").asLong());
    assertEquals(0.025, c2.get("cpuMeanCores").asDouble());
    assertEquals(0.125, c2.get("cpuPeakCores").asDouble());
    assertEquals(64 * MIB, c2.get("memoryBytes").asLong());
    assertEquals(List.of(64.0 * MIB), c2.get("historyMemoryBytes").asList());
    assertEquals("db-0", c2.get("podName").asString());
    assertTrue(c2.get("cpuRequest").isNull() && c2.get("memoryRequestBytes").isNull(), "no requests: absent, not 0");

    // Dead letters: the three bad records, from the cgroups topic, in the shared DLQ.
    stack.await(() -> stack.readAll("cg.dlq").size() >= 3, "3 dead letters committed");
    List<ConsumerRecord<byte[], byte[]>> dead = new ArrayList<>(stack.readAll("cg.dlq"));
    assertEquals(3, dead.size());
    dead.sort(Comparator.comparingLong(r -> Long.parseLong(StreamJobHarness.header(r, DeadLetterSerializer.OFFSET))));
    assertEquals("invalid: negative count or size -5 (cpuNs, throttled, memory, io, pids, ticks)",
        StreamJobHarness.header(dead.get(0), DeadLetterSerializer.REASON));
    assertTrue(StreamJobHarness.header(dead.get(1), DeadLetterSerializer.REASON).startsWith("undecodable: "));
    assertEquals("cg.cgroups", StreamJobHarness.header(dead.get(1), DeadLetterSerializer.TOPIC));
    assertEquals("invalid: cpuRequestCores -1.0", StreamJobHarness.header(dead.get(2), DeadLetterSerializer.REASON));

    // A replay (a new consumer group reads the same records again): the same graph.
    List<String> before = stack.dump();
    run("cgroups-2");
    assertEquals(before, stack.dump());
  }
}
