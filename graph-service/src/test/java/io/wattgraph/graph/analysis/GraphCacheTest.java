package io.wattgraph.graph.analysis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The graph cache on a hand-driven clock: freshness bound, per-filter keys, failures not kept, off at 0. */
class GraphCacheTest {

    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final AtomicInteger reads = new AtomicInteger();
    private final Function<GraphFilter, ServiceGraphLoader.Loaded> load = f -> {
        reads.incrementAndGet();
        return new ServiceGraphLoader.Loaded(new ServiceGraph(List.of(), List.of()), Map.of());
    };

    @Test
    void servesTheSameReadUntilTheTtlHasPassedSinceTheReadStarted() {
        GraphCache cache = new GraphCache(Duration.ofSeconds(2), clock::get);
        GraphCache.Hit first = cache.get(GraphFilter.NONE, load);
        assertThat(first.readStartNs()).isEqualTo(1_000_000_000L);
        clock.addAndGet(Duration.ofMillis(1999).toNanos());
        GraphCache.Hit second = cache.get(GraphFilter.NONE, load);
        assertThat(second.loaded()).isSameAs(first.loaded());
        assertThat(reads).hasValue(1);
        clock.addAndGet(Duration.ofMillis(1).toNanos()); // exactly 2 s old: stale
        GraphCache.Hit third = cache.get(GraphFilter.NONE, load);
        assertThat(third.loaded()).isNotSameAs(first.loaded());
        assertThat(third.readStartNs()).isEqualTo(3_000_000_000L);
        assertThat(reads).hasValue(2);
    }

    @Test
    void keysByFilterAndEvictsExpiredEntries() {
        GraphCache cache = new GraphCache(Duration.ofSeconds(2), clock::get);
        cache.get(GraphFilter.NONE, load);
        cache.get(new GraphFilter("host-a", null, null, null), load);
        cache.get(new GraphFilter("host-a", null, null, null), load);
        assertThat(reads).hasValue(2);
        assertThat(cache.size()).isEqualTo(2);
        clock.addAndGet(Duration.ofSeconds(5).toNanos());
        cache.get(new GraphFilter(null, "shop", null, null), load); // a new read evicts the two expired ones
        assertThat(cache.size()).isEqualTo(1);
        cache.invalidate();
        cache.get(new GraphFilter(null, "shop", null, null), load);
        assertThat(reads).hasValue(4);
    }

    @Test
    void aFailedReadIsNotKept() {
        GraphCache cache = new GraphCache(Duration.ofSeconds(2), clock::get);
        assertThatThrownBy(() -> cache.get(GraphFilter.NONE, f -> {
            throw new IllegalStateException("neo4j down");
        })).isInstanceOf(IllegalStateException.class).hasMessage("neo4j down");
        assertThat(cache.size()).isZero();
        cache.get(GraphFilter.NONE, load);
        assertThat(reads).hasValue(1);
    }

    @Test
    void zeroTtlReadsEveryTime() {
        GraphCache cache = new GraphCache(Duration.ZERO, clock::get);
        assertThat(cache.enabled()).isFalse();
        cache.get(GraphFilter.NONE, load);
        cache.get(GraphFilter.NONE, load);
        assertThat(reads).hasValue(2);
        assertThat(cache.size()).isZero();
        assertThatThrownBy(() -> new GraphCache(Duration.ofSeconds(-1), clock::get))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void refreshHotReplacesUsedGraphsInTheBackgroundAndLetsIdleOnesGo() {
        GraphCache cache = new GraphCache(Duration.ofSeconds(2), clock::get);
        long after = Duration.ofSeconds(1).toNanos(), idle = Duration.ofSeconds(10).toNanos();
        GraphCache.Hit first = cache.get(GraphFilter.NONE, load);
        clock.addAndGet(Duration.ofMillis(500).toNanos());
        assertThat(cache.refreshHot(load, after, idle)).isZero(); // younger than refresh-after
        clock.addAndGet(Duration.ofMillis(600).toNanos());
        assertThat(cache.refreshHot(load, after, idle)).isEqualTo(1);
        assertThat(reads).hasValue(2);
        // Past the first read's ttl a request gets the refreshed graph without reading, with its (honest) age.
        clock.addAndGet(Duration.ofMillis(1500).toNanos());
        GraphCache.Hit second = cache.get(GraphFilter.NONE, load);
        assertThat(second.loaded()).isNotSameAs(first.loaded());
        assertThat(second.readStartNs()).isEqualTo(first.readStartNs() + Duration.ofMillis(1100).toNanos());
        assertThat(reads).hasValue(2);
        // Not requested for refresh-idle: no more background reads; it expires and the next request reads itself.
        clock.addAndGet(Duration.ofSeconds(10).toNanos());
        assertThat(cache.refreshHot(load, after, idle)).isZero();
        assertThat(reads).hasValue(2);
        cache.get(GraphFilter.NONE, load);
        assertThat(reads).hasValue(3);
    }

    @Test
    void aFailedRefreshKeepsThePreviousGraphUntilItExpires() {
        GraphCache cache = new GraphCache(Duration.ofSeconds(2), clock::get);
        GraphCache.Hit first = cache.get(GraphFilter.NONE, load);
        clock.addAndGet(Duration.ofMillis(1500).toNanos());
        assertThat(cache.refreshHot(f -> {
            throw new IllegalStateException("neo4j down");
        }, Duration.ofSeconds(1).toNanos(), Duration.ofSeconds(10).toNanos())).isZero();
        assertThat(cache.get(GraphFilter.NONE, load).loaded()).isSameAs(first.loaded());
        clock.addAndGet(Duration.ofMillis(500).toNanos());
        assertThat(cache.get(GraphFilter.NONE, load).loaded()).isNotSameAs(first.loaded());
        assertThat(reads).hasValue(2);
    }
}
