package io.wattgraph.graph.analysis;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import jakarta.annotation.PreDestroy;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * Loads the graph for a filter (through a {@link GraphCache} of {@code wattgraph.graph.cache-ttl}, default 5 s,
 * whose age each HTTP answer reports in {@value #AGE_HEADER}), aggregates it to a level, and times analyses as
 * {@code wattgraph.analysis{analysis=NAME}} (the Neo4j part is timed separately by
 * {@link io.wattgraph.graph.neo4j.Neo4jReader}).
 * With {@code wattgraph.graph.refresh-after} (default 2 s; 0 = off) a background thread keeps the graphs of the
 * filters requested within {@code wattgraph.graph.refresh-idle} (default 60 s) younger than the TTL, so their
 * requests do not wait on Neo4j ({@link GraphCache#refreshHot}).
 */
@Service
public class ServiceGraphService {

    static final String ANALYSIS_TIMER = "wattgraph.analysis";

    /** Response header: how old the graph behind the answer is (ms since its read from Neo4j started). */
    public static final String AGE_HEADER = "X-Wattgraph-Graph-Age-Ms";
    private static final Logger log = LoggerFactory.getLogger(ServiceGraphService.class);

    private final ServiceGraphLoader loader;
    private final MeterRegistry registry;
    private final GraphCache cache;
    private final ScheduledExecutorService refresher;

    public ServiceGraphService(ServiceGraphLoader loader, MeterRegistry registry, GraphCacheProperties properties) {
        Duration cacheTtl = properties.cacheTtl();
        Duration refreshAfter = properties.refreshAfter();
        Duration refreshIdle = properties.refreshIdle();
        this.loader = loader;
        this.registry = registry;
        this.cache = new GraphCache(cacheTtl, System::nanoTime);
        if (refreshAfter.isNegative() || refreshIdle.isNegative()) {
            throw new IllegalArgumentException("wattgraph.graph.refresh-after and refresh-idle must not be negative: "
                    + refreshAfter + ", " + refreshIdle);
        }
        if (cache.enabled() && !refreshAfter.isZero() && refreshAfter.compareTo(cacheTtl) >= 0) {
            throw new IllegalArgumentException("wattgraph.graph.refresh-after (" + refreshAfter
                    + ") must be shorter than wattgraph.graph.cache-ttl (" + cacheTtl + ") or 0s (off)");
        }
        if (cache.enabled() && !refreshAfter.isZero() && !refreshIdle.isZero()) {
            long afterNs = refreshAfter.toNanos(), idleNs = refreshIdle.toNanos();
            // Polled at a quarter of refresh-after: a graph is re-read at most that late.
            long pollMs = Math.max(50, refreshAfter.toMillis() / 4);
            refresher = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "graph-cache-refresher");
                t.setDaemon(true);
                return t;
            });
            refresher.scheduleWithFixedDelay(() -> {
                try {
                    cache.refreshHot(loader::load, afterNs, idleNs);
                } catch (RuntimeException e) {
                    log.debug("graph refresh failed", e); // the failed read is not kept; requests read themselves
                }
            }, pollMs, pollMs, TimeUnit.MILLISECONDS);
        } else {
            refresher = null;
        }
    }

    @PreDestroy
    void stopRefresher() {
        if (refresher != null) {
            refresher.shutdownNow();
        }
    }

    public ServiceGraph graph(GraphFilter filter, Level level) {
        return aggregate(load(filter), level);
    }

    /** The process-level graph and the groups' own metrics, to aggregate to several levels from one read. */
    public ServiceGraphLoader.Loaded load(GraphFilter filter) {
        GraphCache.Hit hit = cache.get(filter, loader::load);
        if (RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes attributes
                && attributes.getResponse() != null && !attributes.getResponse().isCommitted()) {
            long ageMs = Math.max(0, (cache.nowNs() - hit.readStartNs()) / 1_000_000);
            attributes.getResponse().setHeader(AGE_HEADER, Long.toString(ageMs));
        }
        return hit.loaded();
    }

    /** Drops the cached graphs: the next request reads Neo4j. */
    public void invalidate() {
        cache.invalidate();
    }

    public ServiceGraph aggregate(ServiceGraphLoader.Loaded loaded, Level level) {
        return timed("aggregate", () -> Aggregator.aggregate(loaded.graph(), level, loaded.groupMetrics()));
    }

    public <T> T timed(String analysis, Supplier<T> work) {
        Timer.Sample sample = Timer.start(registry);
        try {
            return work.get();
        } finally {
            sample.stop(Timer.builder(ANALYSIS_TIMER).description("Time spent in graph analyses (without Neo4j)")
                    .tag("analysis", analysis).register(registry));
        }
    }
}
