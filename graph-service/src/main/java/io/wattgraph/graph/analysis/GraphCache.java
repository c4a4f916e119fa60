package io.wattgraph.graph.analysis;

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
 * 5 s; 0 turns it off): the page's refresh and a burst of analyses read the graph once instead of once per request.
 * Age is counted from the start of the read, so an answer never reflects Neo4j older than {@code ttl}. Concurrent
 * misses for one filter share a single read; a failed read is not kept.
 *
 * <p>{@link #refreshHot} (run by {@link ServiceGraphService} every few hundred ms when
 * {@code wattgraph.graph.refresh-after} is set) re-reads, in the caller's thread, each filter requested within
 * {@code refresh-idle} whose graph is {@code refresh-after} old, and swaps it in when the read succeeds: requests
 * keep getting the previous graph (still younger than ttl) meanwhile, so they do not wait on Neo4j. If a refresh is
 * slower than {@code ttl - refresh-after}, a request finding the graph expired joins the refresh in flight.
 */
public final class GraphCache {

    /** A loaded graph and when its read started ({@code clock} ns). */
    public record Hit(ServiceGraphLoader.Loaded loaded, long readStartNs) {
    }

    private static final class Entry {
        final FutureTask<ServiceGraphLoader.Loaded> task;
        final long readStartNs;
        volatile long lastUsedNs;
        volatile Entry refresh; // the background read replacing this one, while in flight

        Entry(FutureTask<ServiceGraphLoader.Loaded> task, long readStartNs) {
            this.task = task;
            this.readStartNs = readStartNs;
            this.lastUsedNs = readStartNs;
        }

        FutureTask<ServiceGraphLoader.Loaded> task() {
            return task;
        }

        long readStartNs() {
            return readStartNs;
        }
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
        Entry inFlight = current == null ? null : current.refresh;
        if (current != null && !fresh(current, now) && inFlight != null && fresh(inFlight, now)) {
            current = inFlight; // expired while its refresh is running: wait for that rather than read again
        }
        if (current == null || !fresh(current, now)) {
            Entry mine = new Entry(new FutureTask<>(() -> load.apply(filter)), now);
            current = entries.compute(filter, (k, old) -> old != null && fresh(old, now) ? old : mine);
            if (current == mine) {
                evictExpired(now);
                mine.task().run();
            }
        }
        current.lastUsedNs = now;
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

    /**
     * Re-reads every filter used within {@code idleNs} whose graph started reading at least {@code refreshAfterNs}
     * ago (one at a time, in this thread); a read that fails leaves the previous graph until it expires.
     * Returns the number of graphs replaced.
     */
    public int refreshHot(Function<GraphFilter, ServiceGraphLoader.Loaded> load, long refreshAfterNs, long idleNs) {
        int replaced = 0;
        for (Map.Entry<GraphFilter, Entry> kv : entries.entrySet()) {
            Entry old = kv.getValue();
            long now = clock.getAsLong();
            if (!enabled() || !old.task().isDone() || now - old.lastUsedNs >= idleNs
                    || now - old.readStartNs() < refreshAfterNs) {
                continue;
            }
            GraphFilter filter = kv.getKey();
            Entry next = new Entry(new FutureTask<>(() -> load.apply(filter)), now);
            next.lastUsedNs = old.lastUsedNs;
            old.refresh = next;
            next.task().run();
            try {
                next.task().get();
            } catch (ExecutionException | InterruptedException e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                    return replaced;
                }
                old.refresh = null;
                continue; // not kept; the old graph expires at ttl and the next request reads Neo4j itself
            }
            // A refresh is not a use: the filter goes idle refresh-idle after its last request.
            next.lastUsedNs = Math.max(old.lastUsedNs, next.lastUsedNs);
            if (entries.replace(filter, old, next)) {
                replaced++;
            }
            old.refresh = null;
        }
        return replaced;
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
