package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

/**
 * One real fault, injected and ended by {@link #inject}: each kind the outage tests inject, as a
 * part the soak's seeded schedule ({@link FaultSchedule}) can place at any time. {@link #inject}
 * returns once the fault is over and the part it hit serves again, with what it observed.
 */
interface Fault {
  /** Short name, as the schedule prints it. */
  String name();

  /** About how long the fault lasts, recovery included, for placing it in the schedule. */
  long expectedMs();

  /** Injects the fault, holds it, ends it; what it saw, for the report. */
  String inject() throws Exception;

  /** The broker killed with SIGKILL and started again on its log directory {@code downMs} later. */
  static Fault brokerKill(KafkaProcess kafka, long downMs) {
    return new Of("broker SIGKILL " + downMs / 1000 + " s", downMs + 10_000, () -> {
      kafka.kill();
      Thread.sleep(downMs);
      kafka.start();
      return "broker back";
    });
  }

  /** One agent's packets to the broker dropped for {@code ms}, the other agents unaffected. */
  static Fault brokerBlock(String host, BrokerBlock block, long ms) {
    return new Of(host + " cut off from the broker " + ms / 1000 + " s", ms, () -> {
      block.block();
      try {
        Thread.sleep(ms);
      } finally {
        block.unblock();
      }
      return "unblocked";
    });
  }

  /**
   * The TaskManager killed with SIGKILL and a new one started; the same job, restarted by its
   * JobManager, restores the last checkpoint before the kill or a later one (asserted).
   */
  static Fault taskManagerKill(ClusterJob job) {
    return new Of("TaskManager SIGKILL", 40_000, () -> {
      String jobId = job.jobId();
      long before = job.latestCompleted().path("id").asLong();
      long lastRestore = job.restored().path("restore_timestamp").asLong(-1);
      job.cluster.killTaskManager();
      job.cluster.startTaskManager();
      job.awaitRestoreAfter(lastRestore);
      long restored = job.restored().path("id").asLong(-1);
      assertEquals(jobId, job.jobId(), "the same job, restarted by its JobManager");
      assertTrue(restored >= before, "restored from the last checkpoint before the kill (" + before
          + " or later): " + job.restored());
      return "killed after checkpoint " + before + ", restored from " + restored;
    });
  }

  /**
   * The JobManager killed with SIGKILL and a new one started; without HA the job is gone with it,
   * is submitted again and starts from the old job's newest retained checkpoint (asserted).
   */
  static Fault jobManagerKill(ClusterJob job) {
    return new Of("JobManager SIGKILL", 60_000, () -> {
      String oldJob = job.jobId();
      long before = job.latestCompleted().path("id").asLong();
      job.cluster.killJobManager();
      job.cluster.startJobManager();
      Path newest = job.newestCheckpoint(oldJob);
      job.resubmit();
      JsonNode restored = job.restored();
      assertNotEquals(oldJob, job.jobId(), "a new job: the JobManager's was gone with it");
      assertEquals(newest, Path.of(URI.create(restored.path("external_path").asText("file:/none"))),
          "restored from the old job's newest retained checkpoint: " + restored);
      assertTrue(restored.path("id").asLong(-1) >= before,
          "no older than the last checkpoint seen before the kill (" + before + "): " + restored);
      return "killed after checkpoint " + before + ", job " + job.jobId() + " restored from " + newest;
    });
  }

  /** Neo4j stopped for {@code ms} (longer than the job's checkpoint and Kafka transaction timeouts). */
  static Fault neo4jStop(OutageStack stack, long ms) {
    return new Of("Neo4j stopped " + ms / 1000 + " s", ms + 10_000, () -> {
      String before = stack.job.status();
      stack.stopNeo4j();
      Thread.sleep(ms);
      String during = stack.job.status();
      stack.startNeo4j();
      return "job " + before + " before, " + during + " at the end of the outage";
    });
  }

  /**
   * An agent killed with SIGKILL while records sit in its memory spool, and started again: its
   * host's traffic held ({@code quiet}: an agent sees no connection that opens or closes while it
   * is down), its path to the broker cut while {@code whileCut} runs traffic of its host, then
   * the kill once the last intervals reached the spool, the restart, the path restored.
   */
  static Fault agentKill(String host, OutageStack stack, int index, BrokerBlock block, Lock quiet,
      Callable<?> whileCut) {
    return new Of(host + " agent SIGKILL", 30_000, () -> {
      quiet.lock();
      try {
        block.block();
        whileCut.call();
        // The last transaction intervals and the snapshot sweep reach the spool (1 s and 5 s).
        Thread.sleep(TimeUnit.SECONDS.toMillis(7));
        double spooled = OutageStack.memorySpool(stack.agentMetrics(index));
        stack.agents[index].kill();
        stack.agents[index].start();
        block.unblock();
        return String.format("%.0f records in its memory spool at the kill", spooled);
      } finally {
        if (block.blocked()) {
          block.unblock();
        }
        quiet.unlock();
      }
    });
  }

  /** A fault from its name, expected duration and action. */
  record Of(String name, long expectedMs, Callable<String> action) implements Fault {
    @Override
    public String inject() throws Exception {
      return action.call();
    }
  }
}
