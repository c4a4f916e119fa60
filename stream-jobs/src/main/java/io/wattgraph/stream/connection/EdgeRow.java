package io.wattgraph.stream.connection;

import io.wattgraph.stream.EdgeTotals;

/**
 * What the sink writes for one edge: its absolute totals (idempotent, so replays and restores
 * from a checkpoint converge on the same graph), or its deletion.
 */
public class EdgeRow {
  public boolean delete;
  public String edgeKey;
  public GraphNode client;
  public GraphNode server;
  public long bytesClientToServer;
  public long bytesServerToClient;
  public long connections;
  /** Σ of the counted connections' weights (load shedding): equals connections when nothing was sampled. */
  public double connectionsEstimated;
  /** Counted connections whose weight is not 1. */
  public long connectionsSampled;
  public long firstSeenNs;
  public long lastSeenNs;

  public EdgeRow() {}

  static EdgeRow upsert(String edgeKey, EdgeTotals t) {
    EdgeRow r = new EdgeRow();
    r.edgeKey = edgeKey;
    r.client = t.client;
    r.server = t.server;
    r.bytesClientToServer = t.bytesClientToServer;
    r.bytesServerToClient = t.bytesServerToClient;
    r.connections = t.connections;
    r.connectionsEstimated = t.connectionsEstimated();
    r.connectionsSampled = t.connectionsSampled;
    r.firstSeenNs = t.firstSeenNs;
    r.lastSeenNs = t.lastSeenNs;
    return r;
  }

  static EdgeRow deletion(String edgeKey, GraphNode client, GraphNode server) {
    EdgeRow r = new EdgeRow();
    r.delete = true;
    r.edgeKey = edgeKey;
    r.client = client;
    r.server = server;
    return r;
  }

  @Override
  public String toString() {
    return (delete ? "DELETE " : "UPSERT ") + edgeKey
        + (delete ? "" : " c2s=" + bytesClientToServer + " s2c=" + bytesServerToClient + " n=" + connections
            + (connectionsSampled != 0 ? " est=" + connectionsEstimated + " sampled=" + connectionsSampled : ""));
  }
}
