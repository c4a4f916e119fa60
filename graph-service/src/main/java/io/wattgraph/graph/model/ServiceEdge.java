package io.wattgraph.graph.model;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * A directed client-to-server edge of the analysis graph with traffic totals and (when written) request
 * metrics: {@code requestRate} requests/s and client-side latencies in ms.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ServiceEdge(
        String source,
        String target,
        long bytesClientToServer,
        long bytesServerToClient,
        long connections,
        Long firstSeenNs,
        Long lastSeenNs,
        Double requestRate,
        Double latencyAvgMs,
        Double latencyP50Ms,
        Double latencyP75Ms,
        Double latencyP90Ms,
        Double latencyP99Ms) {

    public static ServiceEdge traffic(String source, String target, long c2s, long s2c) {
        return new ServiceEdge(source, target, c2s, s2c, 1, null, null, null, null, null, null, null, null);
    }

    public static ServiceEdge requests(String source, String target, double requestRate, Double latencyAvgMs) {
        return new ServiceEdge(source, target, 0, 0, 1, null, null, requestRate, latencyAvgMs, null, null, null,
                null);
    }

    @JsonIgnore
    public long bytes() {
        return bytesClientToServer + bytesServerToClient;
    }

    public Double latencyMs(Percentile p) {
        return switch (p) {
            case AVG -> latencyAvgMs;
            case P50 -> latencyP50Ms;
            case P75 -> latencyP75Ms;
            case P90 -> latencyP90Ms;
            case P99 -> latencyP99Ms;
        };
    }
}
