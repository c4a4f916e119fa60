package io.wattgraph.graph;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.wattgraph.graph.analysis.Aggregator;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import java.util.function.Supplier;
import org.springframework.stereotype.Service;

/**
 * Loads the graph for a filter, aggregates it to a level, and times analyses as
 * {@code wattgraph.analysis{analysis=NAME}} (the Neo4j part is timed separately by {@link Neo4jReader}).
 */
@Service
public class ServiceGraphService {

    static final String ANALYSIS_TIMER = "wattgraph.analysis";

    private final ServiceGraphLoader loader;
    private final MeterRegistry registry;

    public ServiceGraphService(ServiceGraphLoader loader, MeterRegistry registry) {
        this.loader = loader;
        this.registry = registry;
    }

    public ServiceGraph graph(GraphFilter filter, Level level) {
        ServiceGraphLoader.Loaded loaded = loader.load(filter);
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
