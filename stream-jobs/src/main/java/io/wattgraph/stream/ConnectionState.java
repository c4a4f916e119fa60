package io.wattgraph.stream;

import io.wattgraph.stream.source.Observation;

/**
 * Correlator state for one connection instance of a key (a 4-tuple): up to one side per endpoint of
 * the sorted pair. {@code low} is the side whose local endpoint sorts first. A key usually holds one
 * instance; when the tuple is reused while an earlier instance is still remembered, the newest is the
 * key's value state and the others its list state ({@code ConnectionCorrelator}).
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
  /**
   * Memory of a closed connection past its closed retention (0 = none): processing time (ms) and the
   * input's event-time progress (ns) both must pass these before it is forgotten. A lone end waits
   * whole for a late peer meanwhile; a finished pair keeps its sockets ({@link #finished}).
   */
  public long memoryUntil;
  public long memoryUntilNs;
  /**
   * On the newest instance only: whether the key has earlier instances, and the earliest of their
   * deadlines (0 = none), so the key's one timer covers them without reading their state.
   */
  public boolean hasEarlier;
  public long earlierDeadline;
  /** Instances of this connection after wake-ups: 0 for the first; ids get "#generation". */
  public int generation;
  public String baseConnectionId;
  /** Cumulative bytes already folded into the totals by earlier generations. */
  public long baselineClientToServer;
  public long baselineServerToClient;

  public ConnectionState() {}

  public Side side(boolean isLow) {
    return isLow ? low : high;
  }

  public void setSide(boolean isLow, Side s) {
    if (isLow) {
      low = s;
    } else {
      high = s;
    }
  }

  public boolean paired() {
    return low != null && high != null;
  }

  /** Earliest own deadline (0 = none). */
  public long nextDeadline() {
    return earliest(earliest(horizonTimer, cleanupTimer), earliest(idleTimer, memoryUntil));
  }

  /** The earlier of two deadlines, 0 meaning none. */
  public static long earliest(long a, long b) {
    return a == 0 ? b : b == 0 ? a : Math.min(a, b);
  }

  /** Event time the connection began, as far as its ends show; a tombstone's is unknown (the earliest). */
  public long startNs() {
    if (finished) {
      return Long.MIN_VALUE;
    }
    return Math.min(low == null ? Long.MAX_VALUE : low.firstSeenNs, high == null ? Long.MAX_VALUE : high.firstSeenNs);
  }

  public long lastSeenNs() {
    return Math.max(low == null ? Long.MIN_VALUE : low.lastSeenNs, high == null ? Long.MIN_VALUE : high.lastSeenNs);
  }

  /** Whether {@code o}'s socket is one of this instance's ends. */
  boolean hasSocket(Observation o) {
    return (low != null && low.sameSocket(o)) || (high != null && high.sameSocket(o));
  }

  /** The tuple was reused by a later connection: this one is over, whether its CLOSED came or not. */
  public void superseded() {
    if (low != null) {
      low.closed = true;
    }
    if (high != null) {
      high.closed = true;
    }
  }

  public boolean allPresentClosed() {
    return (low == null || low.closed) && (high == null || high.closed) && (low != null || high != null);
  }
}
