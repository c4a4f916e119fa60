package io.wattgraph.graph.topology;

/**
 * A TALKS_TO edge, client ({@code source}) to server ({@code target}), with totals over every
 * connection between the two. Counters are nullable: a writer that has not set one yet yields null, not 0
 * (so {@code connectionsEstimated} and {@code connectionsSampled} are null on edges written before the stream
 * job estimated sampled connections: their estimate is {@code connections}).
 */
public record GraphEdge(
        String source,
        String target,
        String type,
        Long bytesClientToServer,
        Long bytesServerToClient,
        Long connections,
        Double connectionsEstimated,
        Long connectionsSampled,
        Long firstSeenNs,
        Long lastSeenNs) {
}
