package io.wattgraph.system;

import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.metrics.v1.HistogramDataPoint;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import io.opentelemetry.proto.metrics.v1.ScopeMetrics;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An OTLP/HTTP metrics receiver on a free loopback port: decodes each {@code ExportMetricsServiceRequest} (protobuf,
 * with the opentelemetry-proto classes) and keeps the latest point of every histogram series.
 */
final class OtlpReceiver implements AutoCloseable {
  private final HttpServer server;
  /** The latest point per metric name and attributes, with its attributes. */
  private final Map<String, Map.Entry<Map<String, String>, HistogramDataPoint>> histograms = new ConcurrentHashMap<>();

  OtlpReceiver() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/v1/metrics", exchange -> {
      try (exchange) {
        record(ExportMetricsServiceRequest.parseFrom(exchange.getRequestBody()));
        byte[] answer = ExportMetricsServiceResponse.getDefaultInstance().toByteArray();
        exchange.getResponseHeaders().set("Content-Type", "application/x-protobuf");
        exchange.sendResponseHeaders(200, answer.length);
        exchange.getResponseBody().write(answer);
      }
    });
    server.start();
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/metrics";
  }

  private void record(ExportMetricsServiceRequest request) {
    for (ResourceMetrics rm : request.getResourceMetricsList()) {
      for (ScopeMetrics sm : rm.getScopeMetricsList()) {
        for (Metric m : sm.getMetricsList()) {
          for (HistogramDataPoint p : m.hasHistogram() ? m.getHistogram().getDataPointsList()
              : List.<HistogramDataPoint>of()) {
            Map<String, String> attributes = new TreeMap<>();
            for (KeyValue kv : p.getAttributesList()) {
              attributes.put(kv.getKey(), kv.getValue().getStringValue());
            }
            histograms.put(m.getName() + attributes, Map.entry(attributes, p));
          }
        }
      }
    }
  }

  /**
   * The latest histogram {@code name} pushed for the one series whose attributes include {@code labels}, as a
   * scrape shows it (cumulative counts, the last bound +Inf); null when none was pushed.
   */
  ScrapedHistogram histogram(String name, Map<String, String> labels) {
    List<HistogramDataPoint> points = histograms.entrySet().stream()
        .filter(e -> e.getKey().startsWith(name + "{")
            && e.getValue().getKey().entrySet().containsAll(labels.entrySet()))
        .map(e -> e.getValue().getValue()).toList();
    if (points.size() > 1) {
      throw new AssertionError("more than one series of " + name + " with " + labels);
    }
    if (points.isEmpty()) {
      return null;
    }
    HistogramDataPoint p = points.get(0);
    List<Double> bounds = new ArrayList<>(p.getExplicitBoundsList());
    bounds.add(Double.POSITIVE_INFINITY);
    List<Long> cumulative = new ArrayList<>();
    long n = 0;
    for (long c : p.getBucketCountsList()) {
      n += c;
      cumulative.add(n);
    }
    return new ScrapedHistogram(bounds, cumulative, p.getCount(), p.getSum());
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
