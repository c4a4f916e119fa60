package io.wattgraph.stream;

/**
 * Correlator state for one connection key: up to one side per endpoint of the sorted pair.
 * {@code low} is the side whose local endpoint sorts first.
 */
public class ConnectionState {
  /** Unique per connection instance, even when the 4-tuple is reused later. */
  public String connectionId;
  public Side low;
  public Side high;
  /** Set once the pairing horizon passed; from then on a lone side is emitted against an External. */
  public boolean horizonPassed;
  /** Edge key and nodes of the last emitted update, so a move can retract it. */
  public String emittedEdgeKey;
  public long horizonTimer;
  public long cleanupTimer;

  public ConnectionState() {}

  Side side(boolean isLow) {
    return isLow ? low : high;
  }

  void setSide(boolean isLow, Side s) {
    if (isLow) {
      low = s;
    } else {
      high = s;
    }
  }

  boolean paired() {
    return low != null && high != null;
  }

  boolean allPresentClosed() {
    return (low == null || low.closed) && (high == null || high.closed) && (low != null || high != null);
  }
}
