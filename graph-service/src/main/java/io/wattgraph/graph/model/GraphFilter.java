package io.wattgraph.graph.model;

/**
 * Which part of the graph to read: edges touching {@code host} (a process of it at either end), edges touching
 * a node of {@code namespace}, edges active in [{@code fromNs}, {@code toNs}] (Unix ns, compared with the edge's
 * firstSeenNs/lastSeenNs: an edge is kept when lastSeenNs >= fromNs and firstSeenNs <= toNs). Null = no filter.
 */
public record GraphFilter(String host, String namespace, Long fromNs, Long toNs) {

    public static final GraphFilter NONE = new GraphFilter(null, null, null, null);
}
