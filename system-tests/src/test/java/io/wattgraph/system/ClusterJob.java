package io.wattgraph.system;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The production job on a standalone session cluster ({@link FlinkCluster}), its shaded jar
 * submitted with Flink's CLI and the job's flags, for {@link OutageStack}. The cluster is
 * configured as the Helm chart configures it where that matters for recovery (hashmap state on the
 * heap, exponential restart delay from 1 s), and with heartbeats that find a killed process within
 * seconds. No HA services: after the JobManager is lost the job is submitted again
 * ({@link #resubmit}) and starts from the newest retained checkpoint (the job's
 * {@code --restore latest}).
 */
final class ClusterJob implements OutageStack.Job {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** What {@code LateSampleCounter} logs for inputs dropped beyond the allowed lateness. */
  static final String LATE_DROPPED = "Input beyond the allowed lateness dropped";
  static final List<String> CONFIG = List.of(
      "taskmanager.memory.process.size: 1600m",
      "state.backend.type: hashmap",
      "taskmanager.memory.managed.fraction: 0.0",
      "restart-strategy.type: exponential-delay",
      "restart-strategy.exponential-delay.initial-backoff: 1s",
      "restart-strategy.exponential-delay.max-backoff: 1min",
      "heartbeat.interval: 2000",
      "heartbeat.timeout: 15000");

  final FlinkCluster cluster;
  private final List<String> flags;
  private String jobId;

  private ClusterJob(FlinkCluster cluster, List<String> flags) {
    this.cluster = cluster;
    this.flags = flags;
  }

  /** A cluster under {@code dir} and the job on it, RUNNING with its first checkpoint complete. */
  static ClusterJob start(Path dir, List<String> flags) throws Exception {
    FlinkCluster cluster = new FlinkCluster(dir, CONFIG);
    try {
      ClusterJob job = new ClusterJob(cluster, flags);
      job.resubmit();
      return job;
    } catch (Exception | AssertionError e) {
      cluster.close();
      throw e;
    }
  }

  String jobId() {
    return jobId;
  }

  /**
   * The job submitted (again) with the same flags, once every slot is free; returns when it runs
   * and has completed a checkpoint of its own.
   */
  void resubmit() throws Exception {
    cluster.await(() -> FlinkClusterEndToEndTest.get(cluster.rest() + "/overview").contains("\"slots-available\":2"),
        "2 free slots");
    jobId = cluster.submit(flags);
    awaitCheckpointAfter(-1);
  }

  /** Waits until the job runs and has completed a checkpoint with an id above {@code id}. */
  void awaitCheckpointAfter(long id) throws Exception {
    cluster.await(() -> "RUNNING".equals(status()) && latestCompleted().path("id").asLong(-1) > id,
        "job " + jobId + " RUNNING with a checkpoint after " + id);
  }

  /**
   * Waits until the job has been restored from a checkpoint later than {@code restoreTimestamp} (a
   * restart: a checkpoint completing after a kill, acknowledged just before it, proves none) and has
   * completed a checkpoint since.
   */
  void awaitRestoreAfter(long restoreTimestamp) throws Exception {
    cluster.await(() -> {
      JsonNode restored = restored();
      return "RUNNING".equals(status()) && restored.path("restore_timestamp").asLong(-1) > restoreTimestamp
          && latestCompleted().path("id").asLong(-1) > restored.path("id").asLong();
    }, "job " + jobId + " restored (after " + restoreTimestamp + ") and checkpointing");
  }

  /** The REST API's newest completed checkpoint ({@code id}, {@code external_path}), missing if none. */
  JsonNode latestCompleted() {
    return checkpoints().path("latest").path("completed");
  }

  /**
   * The newest complete {@code chk-N} (with its {@code _metadata}) that job {@code id} retained under
   * the job's {@code --checkpoint-dir}.
   */
  Path newestCheckpoint(String id) throws IOException {
    Path dir = Path.of(URI.create(flags.get(flags.indexOf("--checkpoint-dir") + 1))).resolve(id);
    try (Stream<Path> chks = Files.list(dir)) {
      return chks.filter(p -> p.getFileName().toString().matches("chk-\\d+") && Files.exists(p.resolve("_metadata")))
          .max(Comparator.comparingLong(p -> Long.parseLong(p.getFileName().toString().substring(4))))
          .orElseThrow(() -> new AssertionError("no complete checkpoint under " + dir));
    }
  }

  /** The checkpoint the job was last restored from ({@code id}, {@code external_path}), missing if none. */
  JsonNode restored() {
    return checkpoints().path("latest").path("restored");
  }

  private JsonNode checkpoints() {
    return json("/jobs/" + jobId + "/checkpoints");
  }

  private JsonNode json(String path) {
    String body = FlinkClusterEndToEndTest.get(cluster.rest() + path);
    try {
      return JSON.readTree(body.isEmpty() ? "{}" : body);
    } catch (IOException e) {
      throw new IllegalStateException("not JSON from " + path + ": " + body, e);
    }
  }

  /** The job's state, or UNREACHABLE while no JobManager answers. */
  @Override
  public String status() {
    return json("/jobs/" + jobId).path("state").asText("UNREACHABLE");
  }

  /**
   * The dropped-input warnings in every TaskManager's log, killed ones included (the first ten of
   * each subtask, then one per 1000): 0 exactly when none was dropped.
   */
  @Override
  public long lateInputsDropped() throws IOException {
    long n = 0;
    for (Path log : cluster.logFiles("taskmanager")) {
      if (Files.exists(log)) {
        try (Stream<String> lines = Files.lines(log)) {
          n += lines.filter(l -> l.contains(LATE_DROPPED)).count();
        }
      }
    }
    return n;
  }

  /**
   * The operator counters named {@code names}, each summed over every operator and subtask of the
   * current job that has it (Flink's REST API: {@code /jobs/ID/vertices/V/subtasks/metrics}).
   */
  Map<String, Long> operatorCounters(List<String> names) {
    Map<String, Long> sums = new TreeMap<>();
    for (JsonNode vertex : json("/jobs/" + jobId).path("vertices")) {
      String base = "/jobs/" + jobId + "/vertices/" + vertex.path("id").asText() + "/subtasks/metrics";
      List<String> ids = new ArrayList<>();
      for (JsonNode m : json(base)) {
        String id = m.path("id").asText();
        if (names.stream().anyMatch(n -> id.endsWith("." + n))) {
          ids.add(id);
        }
      }
      if (!ids.isEmpty()) {
        for (JsonNode m : json(base + "?get=" + String.join(",",
            ids.stream().map(i -> URLEncoder.encode(i, StandardCharsets.UTF_8)).toList()))) {
          String id = m.path("id").asText();
          sums.merge(id.substring(id.lastIndexOf('.') + 1), m.path("sum").asLong(), Long::sum);
        }
      }
    }
    return sums;
  }

  @Override
  public void close() {
    cluster.close();
  }
}
