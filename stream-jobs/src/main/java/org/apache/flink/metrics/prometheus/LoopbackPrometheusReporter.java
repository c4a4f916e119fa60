package org.apache.flink.metrics.prometheus;

import io.prometheus.client.exporter.HTTPServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;

/**
 * Flink's Prometheus reporter on one address instead of every interface: Flink's own
 * {@link PrometheusReporter} binds the wildcard address and has no host option, and
 * {@code bin/wattgraph run} keeps every unauthenticated port on loopback. In Flink's package
 * because the registry it serves is package-private; created by
 * {@code io.wattgraph.stream.metrics.LoopbackPrometheusReporterFactory}.
 */
public final class LoopbackPrometheusReporter extends AbstractPrometheusReporter {
  private final HTTPServer server;

  public LoopbackPrometheusReporter(String host, int port) {
    try {
      server = new HTTPServer(new InetSocketAddress(host, port), registry, true);
    } catch (IOException e) {
      throw new UncheckedIOException("Prometheus reporter: cannot listen on " + host + ":" + port, e);
    }
    log.info("Prometheus reporter listening on {}:{}", host, server.getPort());
  }

  public int port() {
    return server.getPort();
  }

  @Override
  public void close() {
    server.stop();
    super.close();
  }
}
