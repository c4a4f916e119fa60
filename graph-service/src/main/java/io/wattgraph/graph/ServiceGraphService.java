package io.wattgraph.graph;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.wattgraph.graph.analysis.Aggregator;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import java.time.Duration;
import java.util.function.Supplier;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.stereotype.Service;

/**
 * Loads the graph for a filter (through a {@link GraphCache} of {@code wattgraph.graph.cache-ttl}, default 2 s,
 * whose age each HTTP answer reports in {@value #AGE_HEADER}), aggregates it to a level, and times analyses as
 * {@code wattgraph.analysis{analysis=NAME}} (the Neo4j part is timed separately by {@link Neo4jReader}).
 */
@Service
public class ServiceGraphService {

    static final String ANALYSIS_TIMER = "wattgraph.analysis";

    /** Response header: how old the graph behind the answer is (ms since its read from Neo4j started). */
    public static final String AGE_HEADER = "X-Wattgraph-Graph-Age-Ms";

    private final ServiceGraphLoader loader;
    private final MeterRegistry registry;
    private final GraphCache cache;

    public ServiceGraphService(ServiceGraphLoader loader, MeterRegistry registry,
                               @Value("${wattgraph.graph.cache-ttl:2s}") Duration cacheTtl) {
        this.loader = loader;
        this.registry = registry;
        this.cache = new GraphCache(cacheTtl, System::nanoTime);
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
