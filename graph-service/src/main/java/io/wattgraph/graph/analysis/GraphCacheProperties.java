package io.wattgraph.graph.analysis;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The graph cache of {@link ServiceGraphService} ({@code wattgraph.graph.*}).
 *
 * @param cacheTtl analyses reuse a graph whose read from Neo4j started less than this long ago; 0 turns the cache
 *     off
 * @param refreshAfter a background thread re-reads a graph this old (when its filter is in use), so requests do
 *     not wait on Neo4j; shorter than {@code cacheTtl}, 0 turns it off
 * @param refreshIdle a filter counts as in use this long after its last request
 */
@ConfigurationProperties("wattgraph.graph")
public record GraphCacheProperties(
        @DefaultValue("5s") Duration cacheTtl,
        @DefaultValue("2s") Duration refreshAfter,
        @DefaultValue("60s") Duration refreshIdle) {
}
