package io.wattgraph.stream;

import io.wattgraph.stream.metrics.LoopbackPrometheusReporterFactory;
import java.util.Arrays;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Runs the correlation job on a local Flink cluster (a MiniCluster in this JVM) with its REST API,
 * dashboard and every other socket on loopback (the blob server binds to the JobManager's bind
 * host, 0.0.0.0 unless set): {@code --rest-port PORT [--metrics-port PORT]} followed by the job's
 * own flags. {@code --metrics-port} serves the job's metrics (dead letters, late samples, duplicates,
 * unresolved VIPs, one-sided connections, input watermarks) in Prometheus' format on loopback. This
 * is what {@code bin/wattgraph run} starts; on a real cluster {@link CorrelationJob} is submitted as
 * is and the cluster's own reporter serves the same metrics.
 */
public final class LocalClusterMain {
  private LocalClusterMain() {}

  public static void main(String[] args) throws Exception {
    int jobArgs = 2;
    String metricsPort = null;
    if (args.length >= 4 && args[2].equals("--metrics-port")) {
      metricsPort = args[3];
      jobArgs = 4;
    }
    if (args.length < 2 || !args[0].equals("--rest-port") || !isPort(args[1])
        || (metricsPort != null && !isPort(metricsPort))) {
      System.err.println("local-cluster: first flags must be --rest-port PORT [--metrics-port PORT] (0-65535),"
          + " then the job's flags");
      System.err.println(JobConfig.USAGE);
      System.exit(2);
    }
    JobConfig config;
    try {
      config = JobConfig.parse(Arrays.copyOfRange(args, jobArgs, args.length));
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
    if (metricsPort != null) {
      conf.addAll(Configuration.fromMap(Map.of(
          "metrics.reporter.prom.factory.class", LoopbackPrometheusReporterFactory.class.getName(),
          "metrics.reporter.prom.host", "127.0.0.1",
          "metrics.reporter.prom.port", metricsPort)));
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(conf);
    CorrelationJob.build(env, config);
    env.execute("wattgraph-correlation");
  }

  private static boolean isPort(String s) {
    return s.matches("\\d{1,5}") && Integer.parseInt(s) <= 65535;
  }
}
