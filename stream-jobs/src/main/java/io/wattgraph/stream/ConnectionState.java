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
  /**
   * The horizon passed with one end whose peer host is shedding (load shedding): not emitted, since
   * the pairs' weights stand for it, until the peer reports it after all (it then pairs).
   */
  public boolean withheld;
  /**
   * For a lone client end: the process last seen serving its remote endpoint (learnt from paired
   * connections), which the connection is put on instead of an External node; null otherwise.
   */
  public Side resolvedServer;
  /** Edge key and nodes of the last emitted update, so a move can retract it. */
  public String emittedEdgeKey;
  /**
   * Deadlines (processing time, 0 = none): the pairing horizon, the forgetting of a closed
   * connection, the idle check (lazily pushed back). Only the earliest is a registered timer.
   */
  public long horizonTimer;
  public long cleanupTimer;
  /** Processing time of the latest observation. */
  public long lastEventAt;
  public long idleTimer;
  /** The registered processing-time timer not yet fired (0 = none). */
  public long timerAt;
  /**
   * Idle-expired: folded into its edge's totals (FINISHED sent). Kept as a tombstone for one more
   * idle period so that a connection that wakes up continues from these counters instead of
   * counting its cumulative bytes twice.
   */
  public boolean retired;
  /**
   * Closed, reported and past the closed retention: only the sockets (host, cookie) are kept, as a
   * tombstone for the duplicate horizon, so a replay of their events is dropped (also {@link #retired}).
   */
  public boolean finished;
  /** Instances of this connection after wake-ups: 0 for the first; ids get "#generation". */
  public int generation;
  public String baseConnectionId;
  /** Cumulative bytes already folded into the totals by earlier generations. */
  public long baselineClientToServer;
  public long baselineServerToClient;

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
