package io.wattgraph.system;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;

/**
 * The soak: mixed load ({@link SoakLoad}: short connections, long HTTP/1.1 keep-alive connections,
 * pod-like processes started and stopped in cgroups of their own) on three namespace hosts with a
 * real agent each, local-stack's Kafka in its own JVM, Neo4j and the job on a standalone Flink
 * cluster, for {@code WATTGRAPH_SOAK_MINUTES} (default {@value #DEFAULT_MINUTES}); one fault of
 * each kind of the outage tests at times a seeded schedule draws ({@link FaultSchedule}; the seed is
 * printed, {@code WATTGRAPH_SOAK_SEED} replays it): the broker killed, host-a's agent cut off from
 * it, the TaskManager killed, the JobManager killed, Neo4j stopped past the job's checkpoint and
 * Kafka transaction timeouts, host-c's agent killed with records in its memory spool. Afterwards
 * every load's edge (connections, bytes), its transaction windows and their sums equal what its
 * processes counted, no External node, nothing dropped by an agent, no window input dropped as
 * late; the agents' and the job's discard counters are printed. Runs of 10 minutes or more hold the
 * faults as long as the (the broker 60 s down, an agent cut off for 2 min).
 */
class SoakEndToEndTest {
  static final int SUBNET = 82;
  static final int DEFAULT_MINUTES = 3;
  static final long WARMUP_MS = 20_000;
  static final long CHECKPOINT_TIMEOUT_MS = 20_000;
  static final long TRANSACTION_TIMEOUT_MS = 30_000;
  static final long SHORT_PER_SECOND = 100;

  @AutoClose
  private OutageStack stack;
  @AutoClose
  private SoakLoad load;

  @Test
  void mixedLoadThroughOneFaultOfEachKindStaysExact() throws Exception {
    long minutes = Long.parseLong(setting("WATTGRAPH_SOAK_MINUTES", String.valueOf(DEFAULT_MINUTES)));
    long seed = Long.parseLong(setting("WATTGRAPH_SOAK_SEED", String.valueOf(new Random().nextLong())));
    boolean full = minutes >= 10;
    System.out.printf("soak: seed %d (replay: WATTGRAPH_SOAK_SEED=%d), %d minutes%n", seed, seed, minutes);

    Path props = Files.createDirectories(Path.of("target").toAbsolutePath())
        .resolve("soak-" + ProcessHandle.current().pid() + ".properties");
    Files.writeString(props, "transaction.timeout.ms=" + TRANSACTION_TIMEOUT_MS + "\n");
    stack = new OutageStack("sk", SUBNET, 3, List.of("--checkpoint-timeout-ms", String.valueOf(CHECKPOINT_TIMEOUT_MS),
        "--kafka-properties", props.toString()), (work, flags) -> ClusterJob.start(work.resolve("flink-cluster"), flags));
    stack.add(() -> Files.deleteIfExists(props));
    ClusterJob job = (ClusterJob) stack.job;
    BrokerBlock blockA = stack.add(new BrokerBlock("soak-host-a", stack.kafka.port()));
    BrokerBlock blockC = stack.add(new BrokerBlock("soak-host-c", stack.kafka.port()));
    stack.startAgent(SoakLoad.A, blockA.wrapper(), List.of());
    stack.startAgent(SoakLoad.B, List.of(), List.of());
    stack.startAgent(SoakLoad.C, blockC.wrapper(), List.of("--spool-dir", stack.work.resolve("spool-c").toString()));

    load = new SoakLoad(stack, full ? 60 : 20, SHORT_PER_SECOND);
    List<Fault> faults = List.of(
        Fault.brokerKill(stack.kafka, full ? 60_000 : 20_000),
        Fault.brokerBlock("host-a", blockA, full ? 120_000 : 30_000),
        Fault.taskManagerKill(job),
        Fault.jobManagerKill(job),
        Fault.neo4jStop(stack, full ? 60_000 : 35_000),
        Fault.agentKill("host-c", stack, SoakLoad.C, blockC, load.quiet, () -> load.runPod(5)));
    long totalMs = TimeUnit.MINUTES.toMillis(minutes);
    FaultSchedule schedule = FaultSchedule.plan(seed, faults, WARMUP_MS, totalMs - WARMUP_MS);
    System.out.println("soak: " + schedule);

    long start = System.nanoTime();
    // Bounded whatever the faults do: the run's length and 30 min more.
    load.start(start + TimeUnit.MILLISECONDS.toNanos(totalMs) + TimeUnit.MINUTES.toNanos(30));
    List<FaultSchedule.Done> done = schedule.run(start);
    load.stopAt(Math.max(start + TimeUnit.MILLISECONDS.toNanos(totalMs), System.nanoTime() + TimeUnit.SECONDS.toNanos(15)));
    List<OutageStack.Ran> ran = load.finish(240);
    long loadMs = FaultSchedule.sinceMs(start);

    Map<String, Map<String, Double>> agentLosses = new TreeMap<>();
    for (int h = 0; h < 3; h++) {
      agentLosses.put(OutageStack.hostId(h), LossCounters.agent(stack.agentMetrics(h)));
    }
    System.out.printf("soak: load ran %.1f s, %d loads; faults:%n", loadMs / 1000.0, ran.size());
    done.forEach(d -> System.out.println("  " + d));
    System.out.println("soak: agents' discard counters (host-c's since its restart): " + agentLosses);
    System.out.println("soak: job's discard counters (since its last start): " + LossCounters.job(job));

    try {
      stack.assertExactAfterwards(ran);
    } finally {
      // The totals, also when a check failed: what the report needs.
      try {
        report(seed, ran, loadMs, job);
      } catch (Exception e) {
        System.out.println("soak: no totals: " + e);
      }
    }
  }

  /** Sums over every load: what the generators counted, what the graph and the windows hold. */
  private void report(long seed, List<OutageStack.Ran> ran, long loadMs, ClusterJob job) throws Exception {
    Map<String, Long> truth = new TreeMap<>();
    Map<String, Long> graph = new TreeMap<>();
    for (OutageStack.Ran r : ran) {
      for (String k : List.of("connections", "c2s", "s2c", "transactions")) {
        truth.merge(k, r.counts().get(k), Long::sum);
      }
      Map<String, Object> edge = stack.edge(r.load());
      for (Map.Entry<String, String> k : Map.of("n", "connections", "c2s", "c2s", "s2c", "s2c").entrySet()) {
        graph.merge(k.getValue(), edge.get(k.getKey()) == null ? 0 : ((Number) edge.get(k.getKey())).longValue(), Long::sum);
      }
      EdgeWindows w = stack.windows(r.load());
      graph.merge("clientTransactions", w.clientTransactions(), Long::sum);
      graph.merge("serverTransactions", w.serverTransactions(), Long::sum);
      graph.merge("windows", (long) w.latest().size(), Long::sum);
    }
    System.out.printf("soak: seed %d, %d loads over %.1f s: ground truth %s; graph edges and edge windows %s; "
        + "late inputs dropped %d; job's discard counters at the end %s%n", seed, ran.size(), loadMs / 1000.0, truth,
        graph, job.lateInputsDropped(), LossCounters.job(job));
  }

  /** An environment variable, else the system property of the same name, else {@code otherwise}. */
  private static String setting(String name, String otherwise) {
    String v = System.getenv(name);
    return v != null && !v.isBlank() ? v : System.getProperty(name, otherwise);
  }
}
