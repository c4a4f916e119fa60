package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;

/**
 * The job on a standalone Flink session cluster ({@link ClusterJob}: a JobManager and a TaskManager,
 * each a JVM of its own, the shaded jar submitted with Flink's CLI, file checkpoints every 2 s,
 * retained on cancellation) under short-connection load from host-a to host-b, two namespace hosts
 * with a real agent each, local-stack's Kafka and Neo4j. Two loads, each its own edge:
 * <ul>
 *   <li>The TaskManager killed with SIGKILL mid-load and a new one started: the JobManager restarts
 *       the same job from its last checkpoint (asserted from the REST API).
 *   <li>The JobManager killed with SIGKILL mid-load and a new one started. A standalone cluster has
 *       no HA store here, so the job is gone with its JobManager: it is submitted again with the
 *       same flags, and starts from the newest retained checkpoint under {@code --checkpoint-dir}
 *       (the job's {@code --restore latest}, the default; asserted to be the old job's newest).
 * </ul>
 * Afterwards every connection, byte and transaction window of both loads exact, no External node,
 * nothing dropped by an agent, no window input dropped as late.
 */
class FlinkFaultsEndToEndTest {
  static final int SUBNET = 81;
  static final int A = 0;
  static final int B = 1;
  /** 30 s of load each, the kill 10 s in: the job is down for part of it and replays the rest. */
  static final long CONNECTIONS = 9_000;
  static final long PER_SECOND = 300;
  static final long KILL_AFTER_MS = 10_000;

  /** Closed after the test, also when it fails: the cluster, agents, loads, Kafka, Neo4j, namespaces. */
  @AutoClose
  private OutageStack stack;

  @Test
  void aTaskManagerAndAJobManagerKilledMidLoadLoseNothing() throws Exception {
    stack = new OutageStack("fk", SUBNET, 2, List.of(),
        (work, flags) -> ClusterJob.start(work.resolve("flink-cluster"), flags));
    ClusterJob job = (ClusterJob) stack.job;
    stack.startAgents();

    ConnectionLoad tmLoad = stack.load("tm", A, B, 8080, CONNECTIONS, PER_SECOND);
    Thread.sleep(KILL_AFTER_MS);
    String firstJob = job.jobId();
    long beforeTmKill = job.latestCompleted().path("id").asLong();
    long lastRestore = job.restored().path("restore_timestamp").asLong(-1);
    job.cluster.killTaskManager();
    job.cluster.startTaskManager();
    job.awaitRestoreAfter(lastRestore);
    JsonNode tmRestore = job.restored();
    Map<String, Long> tmCounts = tmLoad.finish();
    System.out.printf("flink faults: TaskManager killed after checkpoint %d, job %s restored from %s; load %s%n",
        beforeTmKill, job.jobId(), tmRestore, tmCounts);
    assertEquals(firstJob, job.jobId(), "the same job, restarted by its JobManager");
    assertTrue(tmRestore.path("id").asLong(-1) >= beforeTmKill,
        "restored from the last checkpoint before the kill (" + beforeTmKill + " or later): " + tmRestore);

    ConnectionLoad jmLoad = stack.load("jm", A, B, 8081, CONNECTIONS, PER_SECOND);
    Thread.sleep(KILL_AFTER_MS);
    long beforeJmKill = job.latestCompleted().path("id").asLong();
    job.cluster.killJobManager();
    job.cluster.startJobManager();
    Path newest = newestCheckpoint(stack.work.resolve("flink").resolve(firstJob));
    job.resubmit();
    JsonNode jmRestore = job.restored();
    Map<String, Long> jmCounts = jmLoad.finish();
    System.out.printf("flink faults: JobManager killed after checkpoint %d, job %s restored from %s (newest retained %s); "
        + "load %s%n", beforeJmKill, job.jobId(), jmRestore, newest, jmCounts);
    assertNotEquals(firstJob, job.jobId(), "a new job: the JobManager's was gone with it");
    assertEquals(newest, Path.of(URI.create(jmRestore.path("external_path").asText("file:/none"))),
        "restored from the old job's newest retained checkpoint: " + jmRestore);
    assertTrue(jmRestore.path("id").asLong(-1) >= beforeJmKill,
        "no older than the last checkpoint seen before the kill (" + beforeJmKill + "): " + jmRestore);

    stack.assertExactAfterwards("TaskManager killed", tmLoad, tmCounts);
    stack.assertExactAfterwards("JobManager killed", jmLoad, jmCounts);
    stack.assertExactEdge("TaskManager killed, at the end", tmLoad, tmCounts);
  }

  /** The newest complete {@code chk-N} (with its {@code _metadata}) of one job's checkpoints. */
  static Path newestCheckpoint(Path jobDir) throws IOException {
    try (Stream<Path> chks = Files.list(jobDir)) {
      return chks.filter(p -> p.getFileName().toString().matches("chk-\\d+") && Files.exists(p.resolve("_metadata")))
          .max(Comparator.comparingLong(p -> Long.parseLong(p.getFileName().toString().substring(4))))
          .orElseThrow(() -> new AssertionError("no complete checkpoint under " + jobDir));
    }
  }
}
