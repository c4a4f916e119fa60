package io.wattgraph.graph;

import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.ServiceGraphLoader;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * The graph read from Neo4j, kept per filter for at most {@code ttl} ({@code wattgraph.graph.cache-ttl}, default
 * 2 s; 0 turns it off): the page's refresh and a burst of analyses read the graph once instead of once per request.
 * Age is counted from the start of the read, so an answer never reflects Neo4j older than {@code ttl}. Concurrent
 * misses for one filter share a single read; a failed read is not kept.
 */
public final class GraphCache {

    /** A loaded graph and when its read started ({@code clock} ns). */
    public record Hit(ServiceGraphLoader.Loaded loaded, long readStartNs) {
    }

    private record Entry(FutureTask<ServiceGraphLoader.Loaded> task, long readStartNs) {
    }

    private final long ttlNs;
    private final LongSupplier clock;
    private final Map<GraphFilter, Entry> entries = new ConcurrentHashMap<>();

    public GraphCache(Duration ttl, LongSupplier clock) {
        if (ttl.isNegative()) {
            throw new IllegalArgumentException("wattgraph.graph.cache-ttl must not be negative: " + ttl);
        }
        this.ttlNs = ttl.toNanos();
        this.clock = clock;
    }

    public boolean enabled() {
        return ttlNs > 0;
    }

    public long nowNs() {
        return clock.getAsLong();
    }

    /** The graph for {@code filter}: a cached one read less than ttl ago, else a fresh read by {@code load}. */
    public Hit get(GraphFilter filter, Function<GraphFilter, ServiceGraphLoader.Loaded> load) {
        long now = clock.getAsLong();
        if (!enabled()) {
            return new Hit(load.apply(filter), now);
        }
        Entry current = entries.get(filter);
        if (current == null || !fresh(current, now)) {
            Entry mine = new Entry(new FutureTask<>(() -> load.apply(filter)), now);
            current = entries.compute(filter, (k, old) -> old != null && fresh(old, now) ? old : mine);
            if (current == mine) {
                evictExpired(now);
                mine.task().run();
            }
        }
        try {
            return new Hit(current.task().get(), current.readStartNs());
        } catch (ExecutionException e) {
            entries.remove(filter, current);
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading the graph", e);
        }
    }

    /** Forgets every cached graph (the next request of each filter reads Neo4j). */
    public void invalidate() {
        entries.clear();
    }

    int size() {
        return entries.size();
    }

    private boolean fresh(Entry e, long now) {
        return now - e.readStartNs() < ttlNs;
    }

    private void evictExpired(long now) {
        entries.values().removeIf(e -> !fresh(e, now) && e.task().isDone());
    }
}
