package io.wattgraph.graph.export;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;

/**
 * The graph's measurements as meters (docs/metrics.md): every {@code refresh} a background thread reads the graph
 * ({@link GraphMetricsReader}: two read transactions), builds a {@link Snapshot} and swaps it into the registry, so
 * {@code /actuator/prometheus} and the OTLP push read memory. Its own meters: {@code wattgraph.export.refresh}
 * (timer by outcome), {@code wattgraph.export.last.success.timestamp}, {@code wattgraph.export.series} and
 * {@code wattgraph.export.entities} by kind, {@code wattgraph.export.omitted} (counter: entities left out by a cap,
 * per refresh) and {@code wattgraph.export.omitted.entities} (left out now).
 */
@Component
public class MetricsExport {

    private static final Logger log = LoggerFactory.getLogger(MetricsExport.class);

    private final GraphMetricsReader reader;
    private final MeterRegistry registry;
    private final MetricsExportProperties properties;
    private final LongSupplier wallClockNs;
    private final Counters counters = new Counters();
    private final ExportedMeters meters;
    private final AtomicLong lastSuccessNs = new AtomicLong();
    private volatile Snapshot snapshot;
    private ScheduledExecutorService scheduler;

    @Autowired
    public MetricsExport(GraphMetricsReader reader, MeterRegistry registry, MetricsExportProperties properties) {
        this(reader, registry, properties, () -> System.currentTimeMillis() * 1_000_000L);
    }

    MetricsExport(GraphMetricsReader reader, MeterRegistry registry, MetricsExportProperties properties,
                  LongSupplier wallClockNs) {
        this.reader = reader;
        this.registry = registry;
        this.properties = properties;
        this.wallClockNs = wallClockNs;
        this.meters = new ExportedMeters(registry);
    }

    @PostConstruct
    void start() {
        if (!properties.enabled()) {
            return;
        }
        Gauge.builder("wattgraph.export.last.success.timestamp", lastSuccessNs, v -> v.get() / 1e9)
                .baseUnit("seconds").description("Unix time of the last refresh of the exported graph metrics")
                .register(registry);
        for (ExportKind kind : ExportKind.values()) {
            Gauge.builder("wattgraph.export.series", meters, m -> m.series(kind)).tag("kind", kind.tagValue())
                    .description("Series of the graph exported now").register(registry);
            Gauge.builder("wattgraph.export.entities", this, x -> x.count(kind, false)).tag("kind", kind.tagValue())
                    .description("Entities of the graph exported now").register(registry);
            Gauge.builder("wattgraph.export.omitted.entities", this, x -> x.count(kind, true))
                    .tag("kind", kind.tagValue())
                    .description("Entities of the graph left out of the export now by its cap").register(registry);
            omittedCounter(kind);
        }
        scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "metrics-export");
            t.setDaemon(true);
            return t;
        });
        scheduler.scheduleWithFixedDelay(this::refreshQuietly, 0, properties.refresh().toMillis(),
                TimeUnit.MILLISECONDS);
    }

    @PreDestroy
    void stop() {
        if (scheduler != null) {
            scheduler.shutdownNow();
        }
    }

    /** The snapshot served now; null before the first refresh succeeded. */
    public Snapshot snapshot() {
        return snapshot;
    }

    /** Reads the graph and serves it; throws when Neo4j could not be read (the previous snapshot stays). */
    public synchronized Snapshot refresh() {
        long startNs = wallClockNs.getAsLong();
        long sinceNs = startNs - properties.staleAfter().toNanos();
        Timer.Sample sample = Timer.start(registry);
        String outcome = "error";
        try {
            Snapshot next = SnapshotBuilder.build(reader.read(sinceNs), startNs, sinceNs, properties, counters);
            counters.commit(sinceNs);
            meters.apply(next);
            next.omitted().forEach((kind, n) -> omittedCounter(kind).increment(n));
            snapshot = next;
            lastSuccessNs.set(startNs);
            outcome = "success";
            return next;
        } catch (RuntimeException e) {
            counters.rollback();
            if (snapshot != null && startNs - lastSuccessNs.get() > properties.staleAfter().toNanos()) {
                meters.clear(); // the values would now be older than stale-after
                snapshot = null;
            }
            throw e;
        } finally {
            sample.stop(Timer.builder("wattgraph.export.refresh").tag("outcome", outcome)
                    .description("Refreshes of the exported graph metrics (Neo4j read and meter update)")
                    .register(registry));
        }
    }

    private void refreshQuietly() {
        try {
            refresh();
        } catch (RuntimeException e) {
            log.warn("metrics export: the graph could not be read: {}", e.toString());
        }
    }

    private double count(ExportKind kind, boolean omitted) {
        Snapshot s = snapshot;
        if (s == null) {
            return 0;
        }
        return omitted ? s.omitted().getOrDefault(kind, 0) : s.of(kind).size();
    }

    private Counter omittedCounter(ExportKind kind) {
        return Counter.builder("wattgraph.export.omitted").tag("kind", kind.tagValue())
                .description("Entities left out of the export by its cap, summed over refreshes").register(registry);
    }
}
