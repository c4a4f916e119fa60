package io.wattgraph.system;

import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.JobConfig;
import io.wattgraph.stream.window.LateSampleCounter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** The production correlation job, unbounded, on a local Flink cluster in this JVM. */
final class RunningJob implements OutageStack.Job {
  private final JobClient client;
  /** The JVM's count of late window inputs dropped when this job started. */
  private final long lateBefore;

  private RunningJob(JobClient client, long lateBefore) {
    this.client = client;
    this.lateBefore = lateBefore;
  }

  /** With the production flags for these servers, then {@code flags} (e.g. shorter windows). */
  static RunningJob start(String kafka, String topic, String boltUri, Path checkpoints, String... flags)
      throws Exception {
    List<String> args = new ArrayList<>(List.of(
        "--kafka-brokers", kafka, "--topic", topic, "--group-id", "system-test",
        "--neo4j-uri", boltUri, "--checkpoint-dir", checkpoints.toUri().toString()));
    args.addAll(List.of(flags));
    return start(JobConfig.parse(args.toArray(String[]::new)));
  }

  /** The job as its command line configures it. */
  static RunningJob start(JobConfig config) throws Exception {
    Configuration conf = new Configuration();
    conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
    conf.set(RestOptions.BIND_PORT, "0");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(2, conf);
    CorrelationJob.build(env, config);
    long lateBefore = LateSampleCounter.DROPPED.get();
    return new RunningJob(env.executeAsync("wattgraph-correlation (system test)"), lateBefore);
  }

  @Override
  public String status() throws Exception {
    return client.getJobStatus().get(30, TimeUnit.SECONDS).name();
  }

  /** The JVM's count: exact while one job runs in it. */
  @Override
  public long lateInputsDropped() {
    return LateSampleCounter.DROPPED.get() - lateBefore;
  }

  @Override
  public void close() throws Exception {
    client.cancel().get(60, TimeUnit.SECONDS);
  }
}
