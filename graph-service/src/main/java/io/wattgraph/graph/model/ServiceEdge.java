package io.wattgraph.graph.model;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * A directed client-to-server edge of the analysis graph with traffic totals and (when written) request
 * metrics: {@code requestRate} requests/s, client-side latencies in ms ({@code latency*Ms}: the edge's own
 * {@code latency*Ms} properties, else the stream job's client round trip {@code clientRtt*Ns}), the server time
 * of the edge's requests ({@code serverTime*Ns}) and the network time ({@code networkTimeMeanNs}), in ms.
 * {@code connections} counts the connections observed; {@code connectionsEstimated} the connections they stand
 * for when the agents sampled them under load shedding (the stream job's estimate; {@code connections} for edges
 * written without one), {@code connectionsSampled} how many of the observed ones were sampled.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ServiceEdge(
        String source,
        String target,
        long bytesClientToServer,
        long bytesServerToClient,
        long connections,
        double connectionsEstimated,
        long connectionsSampled,
        Long firstSeenNs,
        Long lastSeenNs,
        Double requestRate,
        Double latencyAvgMs,
        Double latencyP50Ms,
        Double latencyP75Ms,
        Double latencyP90Ms,
        Double latencyP99Ms,
        Double serverTimeAvgMs,
        Double serverTimeP50Ms,
        Double serverTimeP75Ms,
        Double serverTimeP90Ms,
        Double serverTimeP99Ms,
        Double networkTimeMs) {

    /** Without server and network time (tests, synthetic graphs). */
    public ServiceEdge(String source, String target, long bytesClientToServer, long bytesServerToClient,
                       long connections, Long firstSeenNs, Long lastSeenNs, Double requestRate, Double latencyAvgMs,
                       Double latencyP50Ms, Double latencyP75Ms, Double latencyP90Ms, Double latencyP99Ms) {
        this(source, target, bytesClientToServer, bytesServerToClient, connections, connections, 0, firstSeenNs,
                lastSeenNs, requestRate, latencyAvgMs, latencyP50Ms, latencyP75Ms, latencyP90Ms, latencyP99Ms, null,
                null, null, null, null, null);
    }

    /** This edge with other endpoints (aggregation). */
    public ServiceEdge between(String newSource, String newTarget) {
        return new ServiceEdge(newSource, newTarget, bytesClientToServer, bytesServerToClient, connections,
                connectionsEstimated, connectionsSampled, firstSeenNs, lastSeenNs, requestRate, latencyAvgMs,
                latencyP50Ms, latencyP75Ms, latencyP90Ms, latencyP99Ms, serverTimeAvgMs, serverTimeP50Ms,
                serverTimeP75Ms, serverTimeP90Ms, serverTimeP99Ms, networkTimeMs);
    }

    public static ServiceEdge traffic(String source, String target, long c2s, long s2c) {
        return new ServiceEdge(source, target, c2s, s2c, 1, null, null, null, null, null, null, null, null);
    }

    public static ServiceEdge requests(String source, String target, double requestRate, Double latencyAvgMs) {
        return new ServiceEdge(source, target, 0, 0, 1, null, null, requestRate, latencyAvgMs, null, null, null,
                null);
    }

    /** The stream job's estimate when the edge has one, else the observed count (edges written before it). */
    public static double connectionsEstimated(Double estimated, long connections) {
        return estimated != null ? estimated : connections;
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
