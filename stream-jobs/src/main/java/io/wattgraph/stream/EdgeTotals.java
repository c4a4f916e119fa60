package io.wattgraph.stream;

/**
 * Running totals of one TALKS_TO edge, kept so an update costs O(1) instead of a pass over all of
 * the edge's connections. Finished connections are folded in and forgotten ({@code retired*}).
 */
public class EdgeTotals {
  public GraphNode client;
  public GraphNode server;
  public long bytesClientToServer;
  public long bytesServerToClient;
  public long connections;
  public long firstSeenNs = Long.MAX_VALUE;
  public long lastSeenNs = Long.MIN_VALUE;
  public long retiredFirstSeenNs = Long.MAX_VALUE;
  public long retiredLastSeenNs = Long.MIN_VALUE;

  public EdgeTotals() {}
}
