package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.metrics.v1.AggregationTemporality;
import io.opentelemetry.proto.metrics.v1.HistogramDataPoint;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.wattgraph.graph.export.ExportedHistogram;
import io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import io.opentelemetry.proto.metrics.v1.ScopeMetrics;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.harness.Neo4j;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The graph's measurements leave the service as OTLP metrics (Micrometer's OTLP registry) and on
 * {@code /actuator/prometheus}: a receiver in this test (a plain HTTP server decoding each
 * {@code ExportMetricsServiceRequest} with the opentelemetry-proto classes) gets the values {@link ExportFixture}
 * wrote into a Neo4j of this test's own, and the scrape shows the same.
 */
class MetricsExportOtlpTest {

    private static Neo4j neo4j;
    private static HttpServer receiver;
    private static ConfigurableApplicationContext service;
    private static long nowNs;
    /** The latest value pushed per metric name and attribute set ("name{k=v,...}"). */
    private static final Map<String, Double> pushed = new java.util.concurrent.ConcurrentHashMap<>();
    private static final AtomicReference<String> firstRequestPath = new AtomicReference<>();
    /** The latest histogram point pushed per metric name and attribute set. */
    private static final Map<String, HistogramDataPoint> pushedHistograms = new java.util.concurrent.ConcurrentHashMap<>();

    @BeforeAll
    static void start() throws Exception {
        neo4j = TestNeo4j.startEmpty("metrics-export-otlp");
        nowNs = System.currentTimeMillis() * 1_000_000L;
        ExportFixture.seed(neo4j.boltURI().toString(), nowNs);
        receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        receiver.createContext("/", exchange -> {
            firstRequestPath.compareAndSet(null, exchange.getRequestURI().getPath());
            ExportMetricsServiceRequest request = ExportMetricsServiceRequest.parseFrom(exchange.getRequestBody());
            record(request);
            byte[] answer = ExportMetricsServiceResponse.getDefaultInstance().toByteArray();
            exchange.getResponseHeaders().set("Content-Type", "application/x-protobuf");
            exchange.sendResponseHeaders(200, answer.length);
            exchange.getResponseBody().write(answer);
            exchange.close();
        });
        receiver.start();
        service = new SpringApplicationBuilder(GraphServiceApplication.class).properties("spring.main.banner-mode=off")
                .run("--server.port=0", "--server.address=127.0.0.1", "--wattgraph.neo4j.uri=" + neo4j.boltURI(),
                        "--management.otlp.metrics.export.enabled=true",
                        "--management.otlp.metrics.export.url=http://127.0.0.1:" + receiver.getAddress().getPort()
                                + "/v1/metrics",
                        "--management.otlp.metrics.export.step=1s");
    }

    @AfterAll
    static void stop() {
        if (service != null) {
            service.close();
        }
        if (receiver != null) {
            receiver.stop(0);
        }
        if (neo4j != null) {
            neo4j.close();
        }
    }

    private static void record(ExportMetricsServiceRequest request) {
        for (ResourceMetrics rm : request.getResourceMetricsList()) {
            for (ScopeMetrics sm : rm.getScopeMetricsList()) {
                for (Metric m : sm.getMetricsList()) {
                    List<NumberDataPoint> points = m.hasGauge() ? m.getGauge().getDataPointsList()
                            : m.hasSum() ? m.getSum().getDataPointsList() : List.of();
                    if (m.hasSum()) {
                        pushed.put(m.getName() + "#monotonic", m.getSum().getIsMonotonic() ? 1.0 : 0.0);
                    }
                    pushed.put(m.getName() + "#unit:" + m.getUnit(), 1.0);
                    if (m.hasHistogram()) {
                        pushed.put(m.getName() + "#cumulative", m.getHistogram().getAggregationTemporality()
                                == AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE ? 1.0 : 0.0);
                        for (HistogramDataPoint p : m.getHistogram().getDataPointsList()) {
                            pushedHistograms.put(key(m.getName(), p.getAttributesList()), p);
                        }
                    }
                    for (NumberDataPoint p : points) {
                        pushed.put(key(m.getName(), p.getAttributesList()),
                                p.hasAsDouble() ? p.getAsDouble() : p.getAsInt());
                    }
                }
            }
        }
    }

    private static String key(String name, List<KeyValue> attributes) {
        Map<String, String> sorted = new TreeMap<>();
        for (KeyValue kv : attributes) {
            if (!kv.getKey().equals("application")) {
                sorted.put(kv.getKey(), kv.getValue().getStringValue());
            }
        }
        return name + sorted;
    }

    /** The key of {@link #pushed}: the name and the attributes in key order. */
    private static String key(String name, Map<String, String> tags, String... more) {
        Map<String, String> sorted = new TreeMap<>(tags);
        for (int i = 0; i < more.length; i += 2) {
            sorted.put(more[i], more[i + 1]);
        }
        return name + sorted;
    }

    private static Map<String, String> container(String id, String ns, String pod, String service, String host) {
        return Map.of("container_id", id, "host", host, "namespace", ns, "pod", pod, "service", service);
    }

    private static Map<String, String> edge(String sourceNs, String source, String targetNs, String target) {
        return Map.of("source_namespace", sourceNs, "source_workload", source, "target_namespace", targetNs,
                "target_workload", target);
    }

    /** Waits (at most 60 s: OTLP pushes every second) until {@code key} was pushed. */
    private static double awaitPushed(String key) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!pushed.containsKey(key) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertThat(pushed).as("OTLP metrics received").containsKey(key);
        return pushed.get(key);
    }

    /**
     * The latency histograms, from the known latencies of {@link ExportFixture} to OTLP histograms and Prometheus
     * classic histograms: every cumulative bucket count exact (how many latencies are at most its bound, counted
     * here from the latencies themselves), the count, and the sum of the agent's bucket midpoints.
     */
    @Test
    void latencyHistogramsCarryExactBucketCounts() throws Exception {
        Map<String, String> web = container(ExportFixture.WEB, "shop", "web-5d8f", "web", "node-1");
        Map<String, String> db = container(ExportFixture.DB, "shop", "db-0", "db", "node-2");
        Map<String, Map<Long, Long>> expected = Map.of(
                key("wattgraph.container.server.time.histogram", web), ExportFixture.WEB_SERVER,
                key("wattgraph.container.server.time.histogram", db), ExportFixture.DB_SERVER,
                key("wattgraph.namespace.server.time.histogram", Map.of("namespace", "shop")),
                ExportFixture.union(ExportFixture.WEB_SERVER, ExportFixture.DB_SERVER),
                // web -> db merges web-a -> db and web-b -> db: their histograms added.
                key("wattgraph.edge.client.rtt.histogram", edge("shop", "web", "shop", "db")),
                ExportFixture.union(ExportFixture.WEB_A_RTT, ExportFixture.WEB_B_RTT));
        double[] bounds = ExportedHistogram.UPPER_BOUNDS_SECONDS;
        for (var e : expected.entrySet()) {
            awaitPushed(e.getKey().substring(0, e.getKey().indexOf('{')) + "#cumulative");
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!pushedHistograms.containsKey(e.getKey()) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            HistogramDataPoint p = pushedHistograms.get(e.getKey());
            assertThat(p).as(e.getKey() + " in " + pushedHistograms.keySet()).isNotNull();
            assertThat(p.getExplicitBoundsList()).hasSize(bounds.length - 1);
            long cumulative = 0;
            for (int i = 0; i < bounds.length - 1; i++) {
                assertThat(p.getExplicitBounds(i)).isEqualTo(bounds[i]);
                cumulative += p.getBucketCounts(i);
                assertThat(cumulative).as(e.getKey() + " le " + bounds[i])
                        .isEqualTo(ExportFixture.atMost(e.getValue(), bounds[i]));
            }
            long total = e.getValue().values().stream().mapToLong(Long::longValue).sum();
            assertThat(cumulative + p.getBucketCounts(bounds.length - 1)).isEqualTo(total);
            assertThat(p.getCount()).isEqualTo(total);
            assertThat(p.getSum()).isCloseTo(ExportFixture.sumSeconds(e.getValue()), within(1e-12));
            assertThat(p.getStartTimeUnixNano()).isPositive().isLessThanOrEqualTo(p.getTimeUnixNano());
        }
        assertThat(pushed).containsEntry("wattgraph.edge.client.rtt.histogram#unit:s", 1.0)
                .containsEntry("wattgraph.edge.client.rtt.histogram#cumulative", 1.0);
        // No histogram where nothing was served or stale.
        assertThat(pushedHistograms.keySet()).noneMatch(k -> k.contains(ExportFixture.BATCH))
                .noneMatch(k -> k.contains(ExportFixture.OLD)).noneMatch(k -> k.contains("process:curl"));

        // The scrape: classic histograms with the same buckets, cumulative, and _count and _sum.
        int port = Integer.parseInt(service.getEnvironment().getProperty("local.server.port"));
        String scrape = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/actuator/prometheus")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        assertScraped(scrape, "wattgraph_container_server_time_histogram_seconds",
                "container_id=\"" + ExportFixture.WEB + "\"", ExportFixture.WEB_SERVER);
        assertScraped(scrape, "wattgraph_edge_client_rtt_histogram_seconds",
                "source_workload=\"web\",target_namespace=\"shop\",target_workload=\"db\"",
                ExportFixture.union(ExportFixture.WEB_A_RTT, ExportFixture.WEB_B_RTT));
        assertThat(scrape).contains("# TYPE wattgraph_namespace_server_time_histogram_seconds histogram");
    }

    /** The series of {@code family} whose labels contain {@code labels}: its buckets, count and sum. */
    private static void assertScraped(String scrape, String family, String labels, Map<Long, Long> durations) {
        java.util.regex.Pattern bucket = java.util.regex.Pattern.compile(
                java.util.regex.Pattern.quote(family) + "_bucket\\{(.*)le=\"([^\"]+)\"\\} (\\S+)");
        Map<Double, Double> buckets = new TreeMap<>();
        Double count = null, sum = null;
        for (String line : scrape.split("\n")) {
            if (!line.contains(labels) || !line.contains("application=\"wattgraph-graph-service\"")) {
                continue;
            }
            java.util.regex.Matcher m = bucket.matcher(line);
            if (m.matches()) {
                String le = m.group(2);
                buckets.put(le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le),
                        Double.parseDouble(m.group(3)));
            } else if (line.startsWith(family + "_count{")) {
                count = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            } else if (line.startsWith(family + "_sum{")) {
                sum = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        double[] bounds = ExportedHistogram.UPPER_BOUNDS_SECONDS;
        assertThat(buckets).as(family + " " + labels).hasSize(bounds.length);
        long total = durations.values().stream().mapToLong(Long::longValue).sum();
        for (double le : bounds) {
            assertThat(buckets.get(le)).as(family + " le " + le).isEqualTo(
                    (double) (Double.isInfinite(le) ? total : ExportFixture.atMost(durations, le)));
        }
        assertThat(count).isEqualTo((double) total);
        assertThat(sum).isCloseTo(ExportFixture.sumSeconds(durations), within(1e-9));
    }

    @Test
    void theReceiverGetsWhatTheGraphHolds() throws Exception {
        Map<String, String> web = container(ExportFixture.WEB, "shop", "web-5d8f", "web", "node-1");
        Map<String, String> db = container(ExportFixture.DB, "shop", "db-0", "db", "node-2");
        Map<String, String> batch = container(ExportFixture.BATCH, "batch", "report-1", "", "node-2");
        Map<String, String> node1 = Map.of("host", "node-1"), node2 = Map.of("host", "node-2");
        Map<String, String> shop = Map.of("namespace", "shop");
        Map<String, Double> expected = new HashMap<>();
        expected.put(key("wattgraph.container.energy", web), ExportFixture.energy(ExportFixture.WEB));
        expected.put(key("wattgraph.container.energy", db), ExportFixture.energy(ExportFixture.DB));
        expected.put(key("wattgraph.container.energy", batch), ExportFixture.energy(ExportFixture.BATCH));
        expected.put(key("wattgraph.container.power", web), 12.5);
        expected.put(key("wattgraph.container.cpu.usage", web), 0.8);
        expected.put(key("wattgraph.container.requests.per.second", web), 40.0);
        expected.put(key("wattgraph.container.server.time", web, "quantile", "0.5"), 0.002);
        expected.put(key("wattgraph.container.server.time", web, "quantile", "0.9"), 0.005);
        expected.put(key("wattgraph.container.server.time", web, "quantile", "0.99"), 0.009);
        expected.put(key("wattgraph.container.server.time", db, "quantile", "0.99"), 0.004);
        // c-db's cgroup window (CgroupStats): memory peak and last, throttling, CPU peak.
        expected.put(key("wattgraph.container.memory.peak", db), 3221225472.0);
        expected.put(key("wattgraph.container.memory.usage", db), 2684354560.0);
        expected.put(key("wattgraph.container.cpu.throttled", db), 0.25);
        expected.put(key("wattgraph.container.cpu.peak", db), 1.75);
        expected.put(key("wattgraph.host.energy", node1), ExportFixture.energy("node-1"));
        expected.put(key("wattgraph.host.energy", node2), ExportFixture.energy("node-2"));
        expected.put(key("wattgraph.host.power", node1), 120.0);
        expected.put(key("wattgraph.host.idle.power", node2), 35.0);
        expected.put(key("wattgraph.host.cpu.usage", node1), 3.5);
        expected.put(key("wattgraph.host.window.end.timestamp", node1), nowNs / 1e9);
        expected.put(key("wattgraph.namespace.energy", shop), ExportFixture.energy("shop"));
        expected.put(key("wattgraph.namespace.power", shop), 34.5);
        expected.put(key("wattgraph.namespace.requests.per.second", shop), 60.0);
        expected.put(key("wattgraph.namespace.server.time", shop, "quantile", "0.99"), 0.015);
        // web -> db merges web-a -> db and web-b -> db: totals summed, percentiles the highest.
        Map<String, String> webDb = edge("shop", "web", "shop", "db");
        expected.put(key("wattgraph.edge.bytes", webDb, "direction", "request"), 1500.0);
        expected.put(key("wattgraph.edge.bytes", webDb, "direction", "response"), 70000.0);
        expected.put(key("wattgraph.edge.connections", webDb), 6.0);
        expected.put(key("wattgraph.edge.requests.per.second", webDb), 20.0);
        expected.put(key("wattgraph.edge.client.rtt", webDb, "quantile", "0.5"), 0.0017);
        expected.put(key("wattgraph.edge.client.rtt", webDb, "quantile", "0.99"), 0.007);
        Map<String, String> curlWeb = edge("", "process:curl", "shop", "web");
        expected.put(key("wattgraph.edge.connections", curlWeb), 2.0);
        expected.put(key("wattgraph.edge.connections.estimated", curlWeb), 5.0);
        expected.put(key("wattgraph.edge.bytes", edge("", "external", "shop", "web"), "direction", "response"), 900.0);

        for (Map.Entry<String, Double> e : expected.entrySet()) {
            assertThat(awaitPushed(e.getKey())).as(e.getKey()).isCloseTo(e.getValue(), within(1e-9 * Math.max(1, e.getValue())));
        }
        assertThat(firstRequestPath.get()).isEqualTo("/v1/metrics");
        assertThat(pushed).as("counters are monotonic sums").containsEntry("wattgraph.container.energy#monotonic", 1.0)
                .containsEntry("wattgraph.edge.bytes#monotonic", 1.0)
                .containsEntry("wattgraph.container.energy#unit:joules", 1.0)
                .containsEntry("wattgraph.container.power#unit:watts", 1.0);
        // No series for what the graph does not have (c-batch served nothing), nothing per process or client address,
        // nothing stale (c-old, its edge).
        assertThat(pushed.keySet()).doesNotContain(key("wattgraph.container.requests.per.second", batch),
                        key("wattgraph.container.memory.peak", web))
                .noneMatch(k -> k.contains("198.51.100.9")).noneMatch(k -> k.contains("node-1/10/1"))
                .noneMatch(k -> k.contains(ExportFixture.OLD)).noneMatch(k -> k.contains("gone"));

        // The scrape endpoint serves the same snapshot.
        int port = Integer.parseInt(service.getEnvironment().getProperty("local.server.port"));
        String scrape = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/actuator/prometheus")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        assertThat(scrape).contains("wattgraph_container_energy_joules_total{application=\"wattgraph-graph-service\","
                        + "container_id=\"" + ExportFixture.WEB + "\",host=\"node-1\",namespace=\"shop\",pod=\"web-5d8f\","
                        + "service=\"web\"} 335.0")
                .contains("wattgraph_edge_client_rtt_seconds{application=\"wattgraph-graph-service\",quantile=\"0.99\","
                        + "source_namespace=\"shop\",source_workload=\"web\",target_namespace=\"shop\",target_workload=\"db\"} 0.007")
                .contains("wattgraph_container_memory_peak_bytes{application=\"wattgraph-graph-service\",container_id=\""
                        + ExportFixture.DB + "\",host=\"node-2\",namespace=\"shop\",pod=\"db-0\",service=\"db\"} 3.221225472E9")
                .contains("wattgraph_export_series{application=\"wattgraph-graph-service\",kind=\"container\"}")
                .contains("wattgraph_export_omitted_total{application=\"wattgraph-graph-service\",kind=\"edge\"} 0.0");
    }
}
