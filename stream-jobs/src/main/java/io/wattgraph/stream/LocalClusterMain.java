package io.wattgraph.stream;

import java.util.Arrays;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Runs the correlation job on a local Flink cluster (a MiniCluster in this JVM) with its REST API,
 * dashboard and every other socket on loopback (the blob server binds to the JobManager's bind
 * host, 0.0.0.0 unless set): {@code --rest-port PORT} followed by the job's own flags. This is
 * what {@code bin/wattgraph run} starts; on a real cluster {@link CorrelationJob} is submitted as is.
 */
public final class LocalClusterMain {
  private LocalClusterMain() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2 || !args[0].equals("--rest-port") || !args[1].matches("\\d{1,5}")) {
      System.err.println("local-cluster: first flags must be --rest-port PORT, then the job's flags");
      System.err.println(JobConfig.USAGE);
      System.exit(2);
    }
    JobConfig config;
    try {
      config = JobConfig.parse(Arrays.copyOfRange(args, 2, args.length));
    } catch (IllegalArgumentException e) {
      System.err.println("local-cluster: " + e.getMessage());
      System.err.println(JobConfig.USAGE);
      System.exit(2);
      return;
    }
    Configuration conf = new Configuration();
    conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
    conf.set(RestOptions.ADDRESS, "127.0.0.1");
    conf.set(RestOptions.BIND_PORT, args[1]);
    conf.set(JobManagerOptions.BIND_HOST, "127.0.0.1");
    conf.set(TaskManagerOptions.BIND_HOST, "127.0.0.1");
    conf.set(TaskManagerOptions.HOST, "127.0.0.1");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(conf);
    CorrelationJob.build(env, config);
    env.execute("wattgraph-correlation");
  }
}
