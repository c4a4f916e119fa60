package io.wattgraph.stream.metrics;

import java.util.Properties;
import org.apache.flink.metrics.prometheus.LoopbackPrometheusReporter;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * {@code metrics.reporter.<name>.factory.class} for {@link LoopbackPrometheusReporter}: options
 * {@code host} (default 127.0.0.1) and {@code port} (one port: a local cluster has one JVM).
 */
public final class LoopbackPrometheusReporterFactory implements MetricReporterFactory {
  @Override
  public MetricReporter createMetricReporter(Properties properties) {
    String host = properties.getProperty("host", "127.0.0.1");
    String port = properties.getProperty("port", "");
    if (!port.matches("\\d{1,5}") || Integer.parseInt(port) > 65535) {
      throw new IllegalArgumentException("Prometheus reporter: port must be a number 0-65535, got '" + port + "'");
    }
    return new LoopbackPrometheusReporter(host, Integer.parseInt(port));
  }
}
