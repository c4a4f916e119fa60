package io.wattgraph.graph.export;

import io.micrometer.core.instrument.Tag;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.Exemplars;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricMetadata;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import java.util.ArrayList;
import java.util.List;
import io.micrometer.core.instrument.Tags;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.actuate.autoconfigure.metrics.MetricsProperties;
import org.springframework.stereotype.Component;

/**
 * The export's latency histograms on {@code /actuator/prometheus}: classic histograms ({@code _bucket{le}},
 * {@code _sum}, {@code _count}) read from the served {@link Snapshot} at each scrape, with Micrometer's common tags. Registered on the Prometheus
 * registry Micrometer scrapes, beside its meters: Micrometer has no histogram fed with bucket counts, only with
 * single observations, and the graph holds counts.
 */
@Component
public class PrometheusHistograms implements MultiCollector {

    private final MetricsExport export;
    private final PrometheusRegistry registry;
    private final Tags common;

    @Autowired
    PrometheusHistograms(MetricsExport export, ObjectProvider<PrometheusMeterRegistry> prometheus,
                         ObjectProvider<MetricsProperties> metrics) {
        this(export, prometheus.getIfAvailable(), commonTags(metrics));
    }

    /** Serves {@code export}'s histograms on {@code meters}' scrape (null: nowhere) with the tags {@code common}. */
    public PrometheusHistograms(MetricsExport export, PrometheusMeterRegistry meters, Tags common) {
        this.export = export;
        this.common = common;
        this.registry = meters == null ? null : meters.getPrometheusRegistry();
    }

    @PostConstruct
    public void register() {
        if (registry != null) {
            registry.register(this);
        }
    }

    @PreDestroy
    void unregister() {
        if (registry != null) {
            registry.unregister(this);
        }
    }

    @Override
    public MetricSnapshots collect() {
        return snapshots(export.snapshot(), common);
    }

    /** The tags Micrometer adds to every meter ({@code management.metrics.tags.*}), for series it does not make. */
    static Tags commonTags(ObjectProvider<MetricsProperties> metrics) {
        MetricsProperties p = metrics.getIfAvailable();
        Tags tags = Tags.empty();
        if (p != null) {
            for (var e : p.getTags().entrySet()) {
                tags = tags.and(e.getKey(), e.getValue());
            }
        }
        return tags;
    }

    /** The histograms of {@code snapshot}: one family per series with a histogram, one point per entity. */
    static MetricSnapshots snapshots(Snapshot snapshot, Tags common) {
        List<MetricSnapshot> families = new ArrayList<>();
        if (snapshot == null) {
            return new MetricSnapshots(families);
        }
        for (ExportKind kind : ExportKind.values()) {
            for (int h = 0; h < kind.histograms().size(); h++) {
                List<HistogramDataPointSnapshot> points = new ArrayList<>();
                for (Snapshot.Item item : snapshot.of(kind)) {
                    ExportedHistogram hist = item.histograms().length > h ? item.histograms()[h] : null;
                    if (hist != null) {
                        points.add(new HistogramDataPointSnapshot(
                                ClassicHistogramBuckets.of(ExportedHistogram.UPPER_BOUNDS_SECONDS, hist.counts()),
                                hist.sumSeconds(), labels(common.and(item.tags())), Exemplars.EMPTY, 0L));
                    }
                }
                if (!points.isEmpty()) {
                    ExportKind.HistogramSeries series = kind.histograms().get(h);
                    families.add(new HistogramSnapshot(new MetricMetadata(series.prometheusName(),
                            series.description(), null), points));
                }
            }
        }
        return new MetricSnapshots(families);
    }

    @Override
    public List<String> getPrometheusNames() {
        List<String> names = new ArrayList<>();
        for (ExportKind kind : ExportKind.values()) {
            kind.histograms().forEach(h -> names.add(h.prometheusName()));
        }
        return names;
    }

    private static Labels labels(Tags tags) {
        List<String> keys = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (Tag t : tags) {
            keys.add(t.getKey());
            values.add(t.getValue());
        }
        return Labels.of(keys, values);
    }
}
