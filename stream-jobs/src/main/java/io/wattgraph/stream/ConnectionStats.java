package io.wattgraph.stream;

import io.wattgraph.stream.connection.ConnectionUpdate;

/** The last totals of one live connection on an edge, to apply the next update as a delta. */
public class ConnectionStats {
  public long bytesClientToServer;
  public long bytesServerToClient;
  public long firstSeenNs;
  public long lastSeenNs;
  /** Whether this connection added one to the edge's connection count (continuations do not). */
  public boolean counted;
  /**
   * The weight it was counted with (ConnectionUpdate.weight). The initializer is what state written
   * before weights existed restores to: nothing was sampled then.
   */
  public double weight = 1.0;

  public ConnectionStats() {}

  public static ConnectionStats of(ConnectionUpdate u) {
    ConnectionStats s = new ConnectionStats();
    s.bytesClientToServer = u.bytesClientToServer;
    s.bytesServerToClient = u.bytesServerToClient;
    s.firstSeenNs = u.firstSeenNs;
    s.lastSeenNs = u.lastSeenNs;
    s.weight = u.weight;
    return s;
  }
}
