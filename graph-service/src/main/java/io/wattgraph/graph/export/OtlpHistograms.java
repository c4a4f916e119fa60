package io.wattgraph.graph.export;

import io.micrometer.core.instrument.Tag;
import io.micrometer.core.ipc.http.HttpUrlConnectionSender;
import io.micrometer.registry.otlp.OtlpConfig;
import io.micrometer.registry.otlp.OtlpHttpMetricsSender;
import io.micrometer.registry.otlp.OtlpMetricsSender;
import io.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.InstrumentationScope;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.metrics.v1.AggregationTemporality;
import io.opentelemetry.proto.metrics.v1.Histogram;
import io.opentelemetry.proto.metrics.v1.HistogramDataPoint;
import io.opentelemetry.proto.metrics.v1.Metric;
import io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import io.opentelemetry.proto.metrics.v1.ScopeMetrics;
import io.opentelemetry.proto.resource.v1.Resource;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import io.micrometer.core.instrument.Tags;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.metrics.MetricsProperties;
import org.springframework.stereotype.Component;

/**
 * The export's latency histograms as OTLP histograms (explicit bucket bounds, cumulative), pushed every
 * {@code management.otlp.metrics.export.step} to the same URL, with the same headers and resource attributes as
 * Micrometer's OTLP registry pushes the other meters (its {@link OtlpConfig}, its common tags); only when that
 * export is on.
 * Micrometer's registry cannot carry them: it has no histogram fed with bucket counts. A series' start time is when
 * this process first exported it (a new series after a restart or staleness: a reset, as OTLP defines it).
 */
@Component
class OtlpHistograms {

    private static final Logger log = LoggerFactory.getLogger(OtlpHistograms.class);

    private final MetricsExport export;
    private final OtlpConfig config;
    private final Tags common;
    private final OtlpMetricsSender sender = new OtlpHttpMetricsSender(new HttpUrlConnectionSender());
    /** Start time (Unix ns) of each series exported at the previous push, by item key and series name. */
    private Map<String, Long> starts = new HashMap<>();
    private ScheduledExecutorService scheduler;

    OtlpHistograms(MetricsExport export, ObjectProvider<OtlpConfig> config, ObjectProvider<MetricsProperties> metrics) {
        this.export = export;
        this.config = config.getIfAvailable();
        this.common = PrometheusHistograms.commonTags(metrics);
    }

    @PostConstruct
    void start() {
        if (config == null) {
            return;
        }
        scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "metrics-export-otlp-histograms");
            t.setDaemon(true);
            return t;
        });
        long step = config.step().toMillis();
        scheduler.scheduleAtFixedRate(this::publishQuietly, step, step, TimeUnit.MILLISECONDS);
    }

    @PreDestroy
    void stop() {
        if (scheduler != null) {
            scheduler.shutdownNow();
            publishQuietly(); // the last values, as Micrometer's registry does on close
        }
    }

    private void publishQuietly() {
        try {
            ExportMetricsServiceRequest request = request(export.snapshot(), System.currentTimeMillis() * 1_000_000L);
            if (request != null) {
                sender.send(OtlpMetricsSender.Request.builder(request.toByteArray()).address(config.url())
                        .headers(config.headers()).build());
            }
        } catch (Exception e) {
            log.warn("metrics export: the latency histograms could not be sent to {}: {}", config.url(), e.toString());
        }
    }

    /** The request for {@code snapshot} at {@code nowNs}; null when there is no histogram to send. */
    synchronized ExportMetricsServiceRequest request(Snapshot snapshot, long nowNs) {
        if (snapshot == null) {
            return null;
        }
        Map<String, Long> nextStarts = new HashMap<>();
        ScopeMetrics.Builder scope = ScopeMetrics.newBuilder()
                .setScope(InstrumentationScope.newBuilder().setName("io.wattgraph.graph.export"));
        for (ExportKind kind : ExportKind.values()) {
            for (int h = 0; h < kind.histograms().size(); h++) {
                ExportKind.HistogramSeries series = kind.histograms().get(h);
                Histogram.Builder histogram = Histogram.newBuilder()
                        .setAggregationTemporality(AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE);
                for (Snapshot.Item item : snapshot.of(kind)) {
                    ExportedHistogram hist = item.histograms().length > h ? item.histograms()[h] : null;
                    if (hist == null) {
                        continue;
                    }
                    String key = item.key() + "\u0000" + series.name();
                    long startNs = starts.getOrDefault(key, nowNs);
                    nextStarts.put(key, startNs);
                    HistogramDataPoint.Builder point = HistogramDataPoint.newBuilder().setStartTimeUnixNano(startNs)
                            .setTimeUnixNano(nowNs).setCount(hist.count()).setSum(hist.sumSeconds());
                    for (Tag t : common.and(item.tags())) {
                        point.addAttributes(attribute(t.getKey(), t.getValue()));
                    }
                    double[] bounds = ExportedHistogram.UPPER_BOUNDS_SECONDS;
                    for (int i = 0; i < bounds.length - 1; i++) {
                        point.addExplicitBounds(bounds[i]);
                    }
                    for (long c : hist.counts()) {
                        point.addBucketCounts(c);
                    }
                    histogram.addDataPoints(point);
                }
                if (histogram.getDataPointsCount() > 0) {
                    scope.addMetrics(Metric.newBuilder().setName(series.name()).setUnit("s")
                            .setDescription(series.description()).setHistogram(histogram));
                }
            }
        }
        starts = nextStarts;
        if (scope.getMetricsCount() == 0) {
            return null;
        }
        Resource.Builder resource = Resource.newBuilder();
        config.resourceAttributes().forEach((k, v) -> resource.addAttributes(attribute(k, v)));
        return ExportMetricsServiceRequest.newBuilder()
                .addResourceMetrics(ResourceMetrics.newBuilder().setResource(resource).addScopeMetrics(scope)).build();
    }

    private static KeyValue attribute(String key, String value) {
        return KeyValue.newBuilder().setKey(key).setValue(AnyValue.newBuilder().setStringValue(value)).build();
    }
}
