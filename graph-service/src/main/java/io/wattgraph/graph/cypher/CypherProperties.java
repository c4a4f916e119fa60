package io.wattgraph.graph.cypher;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Limits of the read-only Cypher endpoint ({@code wattgraph.cypher.*}).
 *
 * @param defaultRows rows returned when the request gives no {@code maxRows}
 * @param maxRows the most rows a request may ask for
 * @param defaultTimeout transaction timeout when the request gives no {@code timeoutMs}
 * @param maxTimeout the longest transaction timeout a request may ask for
 * @param maxQueryLength the longest query text accepted, in characters
 * @param maxResultBytes the most a result may cost: bytes Neo4j sends for the query (bolt:// URIs, counted by
 *     {@link WireBudget} before the driver decodes them) and JSON the service builds (estimated while converting);
 *     beyond it the rows are cut ({@code truncated}, {@code limit = maxResultBytes}), or the query is refused with
 *     a 413 when its first row alone is larger
 * @param maxConcurrent Cypher queries running at once; one more is answered 429
 */
@ConfigurationProperties("wattgraph.cypher")
public record CypherProperties(
        @DefaultValue("1000") int defaultRows,
        @DefaultValue("10000") int maxRows,
        @DefaultValue("10s") Duration defaultTimeout,
        @DefaultValue("60s") Duration maxTimeout,
        @DefaultValue("20000") int maxQueryLength,
        @DefaultValue("4MB") DataSize maxResultBytes,
        @DefaultValue("2") int maxConcurrent) {
}
