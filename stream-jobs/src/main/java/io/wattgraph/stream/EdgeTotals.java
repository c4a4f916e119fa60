package io.wattgraph.stream;

import io.wattgraph.stream.connection.GraphNode;

/**
 * Running totals of one TALKS_TO edge, kept so an update costs O(1) instead of a pass over all of
 * the edge's connections. Finished connections are folded in and forgotten ({@code retired*}).
 */
public class EdgeTotals {
  public GraphNode client;
  public GraphNode server;
  public long bytesClientToServer;
  public long bytesServerToClient;
  /** Connections observed (counted once each; continuations not). */
  public long connections;
  /**
   * The estimated connections (Σ weights of the counted ones, load shedding) minus
   * {@link #connections}: kept as the difference so that state written before weights existed
   * (where every connection weighed 1) restores as exact (0), and no sampling adds exactly 0.
   */
  public double connectionsEstimateExcess;
  /** Counted connections whose weight is not 1 (sampled, or shed and reported for their bytes). */
  public long connectionsSampled;
  public long firstSeenNs = Long.MAX_VALUE;
  public long lastSeenNs = Long.MIN_VALUE;
  public long retiredFirstSeenNs = Long.MAX_VALUE;
  public long retiredLastSeenNs = Long.MIN_VALUE;
  /**
   * A retraction may have taken the edge's first or last seen connection: {@link #firstSeenNs} and
   * {@link #lastSeenNs} are recomputed by a timer (ConnectionsPerEdge.SEEN_SETTLE_MS); until then they
   * may still span it.
   */
  public boolean seenStale;

  public EdgeTotals() {}

  public double connectionsEstimated() {
    return connections + connectionsEstimateExcess;
  }

  /** Adds (+1) or removes (-1) a counted connection of the given weight. */
  public void count(int sign, double weight) {
    connections += sign;
    if (weight != 1) {
      connectionsSampled += sign;
      connectionsEstimateExcess += sign * (weight - 1);
    }
    if (connectionsSampled == 0) {
      connectionsEstimateExcess = 0; // every connection left weighs 1: no rounding left behind
    }
  }
}
