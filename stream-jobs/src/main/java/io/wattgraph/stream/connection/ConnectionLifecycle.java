package io.wattgraph.stream.connection;

import io.wattgraph.stream.ConnectionState;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.Side;
import io.wattgraph.stream.source.Observation;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.util.Collector;

/**
 * The life of one connection instance in {@link ConnectionCorrelator}: an end's events applied to
 * it, its deadlines (pairing horizon, closed retention, the memory of a lone end or a tombstone, idle
 * expiry), and what goes on its edge (an upsert, a retraction when it moves, FINISHED when it is
 * folded into its edge's totals), or is withheld because its peer sheds. The correlator keeps the
 * state and the timers and finds the instance an event belongs to.
 */
final class ConnectionLifecycle {
  /** Replayed observations dropped by a tombstone, over every subtask of this JVM (tests read it). */
  static final AtomicLong DUPLICATES_DROPPED = new AtomicLong();
  /** Lone ends withheld because their peer sheds, over every subtask of this JVM (tests read it). */
  static final AtomicLong WITHHELD_BY_SHEDDING_PEER = new AtomicLong();

  private final long horizonMs;
  private final long cleanupDelayMs;
  private final long idleTimeoutMs;
  private final long duplicateHorizonMs;
  /** The duplicate horizon (the memory of closed connections) in ns of event time. */
  private final long memoryNs;
  /** How often a memory whose processing time passed but whose input has not checks again. */
  private final long memoryFloorMs;
  /** Hosts seen shedding and server endpoints seen in pairs (the correlator's operator state). */
  private final PeerMemory peers;
  private final Counter emittedOneSided;
  private final Counter idleExpired;
  private final Counter duplicates;
  private final Counter withheldByPeer;
  private final Counter resolvedByEndpoint;

  ConnectionLifecycle(long horizonMs, long cleanupDelayMs, long idleTimeoutMs, long duplicateHorizonMs, PeerMemory peers,
      MetricGroup metrics) {
    this.horizonMs = horizonMs;
    this.cleanupDelayMs = cleanupDelayMs;
    this.idleTimeoutMs = idleTimeoutMs;
    this.duplicateHorizonMs = duplicateHorizonMs;
    this.memoryNs = duplicateHorizonMs > Long.MAX_VALUE / 1_000_000 ? Long.MAX_VALUE : duplicateHorizonMs * 1_000_000;
    this.memoryFloorMs = Math.max(1, duplicateHorizonMs / 4);
    this.peers = peers;
    emittedOneSided = metrics.counter("oneSidedConnections");
    idleExpired = metrics.counter("idleExpiredConnections");
    duplicates = metrics.counter("duplicateObservationsDropped");
    withheldByPeer = metrics.counter("oneSidedShedByPeer");
    resolvedByEndpoint = metrics.counter("oneSidedResolvedByServerEndpoint");
  }

  /** Applies an end's event to its instance; false for a replay of a finished one (dropped). */
  boolean apply(ConnectionState s, Observation o, boolean isLow, long now, Collector<ConnectionUpdate> out) {
    if (s.finished) {
      // A socket of the finished connection again: a replay of events already counted.
      duplicates.inc();
      DUPLICATES_DROPPED.incrementAndGet();
      return false;
    }
    if (s.retired) {
      revive(s);
    }
    Side side = s.side(isLow);
    if (side == null && s.memoryUntil != 0) {
      // The late peer of a remembered lone end: the connection is whole again, no longer waiting.
      s.memoryUntil = 0;
      s.memoryUntilNs = 0;
    }
    s.lastEventAt = now;
    if (s.idleTimer == 0) {
      s.idleTimer = now + idleTimeoutMs;
    }
    boolean wasPaired = s.paired();
    if (side == null) {
      s.setSide(isLow, Side.from(o));
    } else {
      side.merge(o);
    }
    if (!wasPaired && s.paired()) {
      Side server = s.side(!ConnectionView.clientIsLow(s.low, s.high));
      if (server.role == Role.SERVER) {
        peers.rememberServer(server);
      }
    }

    if (!s.paired() && !s.horizonPassed && s.horizonTimer == 0) {
      s.horizonTimer = now + horizonMs;
    }
    if (s.paired() || (s.horizonPassed && !s.withheld)) {
      emit(s, out);
    }
    scheduleCleanupIfDone(s, now);
    return true;
  }

  /** Applies an instance's deadlines that are due by {@code now} and the input's progress; true when it is to be forgotten. */
  boolean advance(ConnectionState s, long now, long progressNs, Collector<ConnectionUpdate> out) {
    if (s.horizonTimer != 0 && now >= s.horizonTimer) {
      s.horizonTimer = 0;
      if (!s.retired && !s.paired() && !s.horizonPassed) {
        expireHorizon(s, now, out);
        scheduleCleanupIfDone(s, now);
      }
    }
    if (s.cleanupTimer != 0 && now >= s.cleanupTimer) {
      s.cleanupTimer = 0;
      if (!s.retired && s.allPresentClosed()) {
        // All sides closed and the retention passed.
        if (s.paired()) {
          // Nothing more to come: fold it into its edge, keep only its sockets for the memory.
          finish(s, now, out);
          if (duplicateHorizonMs == 0) {
            return true;
          }
          tombstone(s, now);
        } else {
          // A lone end: reported (unless withheld), and kept whole for the memory, not finished, so
          // that its peer, late from a spool, still pairs with it and moves it to its real edge.
          boolean onAnEdge = report(s, now, out);
          if (duplicateHorizonMs == 0) {
            if (onAnEdge) {
              out.collect(ConnectionUpdate.marker(ConnectionUpdate.Type.FINISHED, s.connectionId, s.emittedEdgeKey));
            }
            return true;
          }
          remember(s, now);
        }
      }
      // Otherwise a late peer joined after the lone side closed; wait for it to close too.
    }
    if (s.memoryUntil != 0 && now >= s.memoryUntil) {
      if (progressNs < s.memoryUntilNs) {
        // The input has not moved on that far (stalled, or catching up): look again when it can have.
        long restMs = (s.memoryUntilNs - progressNs) / 1_000_000 + 1;
        s.memoryUntil = now + Math.max(memoryFloorMs, Math.min(restMs, duplicateHorizonMs));
      } else {
        s.memoryUntil = 0;
        if (!s.finished && s.emittedEdgeKey != null) {
          out.collect(ConnectionUpdate.marker(ConnectionUpdate.Type.FINISHED, s.connectionId, s.emittedEdgeKey));
        }
        return true;
      }
    }
    if (s.idleTimer != 0 && now >= s.idleTimer) {
      s.idleTimer = 0;
      if (s.retired) {
        // The tombstone outlived its idle period too: forget it.
        return true;
      }
      long idleUntil = s.lastEventAt + idleTimeoutMs;
      if (s.allPresentClosed()) {
        // Closed: its CLOSED was not lost; the cleanup and the memory see to it.
      } else if (now < idleUntil) {
        // Activity since the deadline was set: push it back (one deadline per key, not per event).
        s.idleTimer = idleUntil;
      } else {
        // No event for a whole idle period (CLOSED lost, agent gone, or just idle): fold into the
        // totals and keep only a tombstone.
        retire(s, now, out);
        s.idleTimer = now + idleTimeoutMs;
      }
    }
    return false;
  }

  /** A closed lone end past its retention waits for its peer for the memory (both clocks). */
  private void remember(ConnectionState s, long now) {
    s.memoryUntil = now + duplicateHorizonMs;
    s.memoryUntilNs = saturatedAdd(s.lastSeenNs(), memoryNs);
    s.idleTimer = 0;
  }

  /**
   * Keeps only the sockets of a finished connection until the memory passes, so a replay of their
   * events is dropped.
   */
  private void tombstone(ConnectionState s, long now) {
    s.memoryUntil = now + duplicateHorizonMs;
    s.memoryUntilNs = saturatedAdd(s.lastSeenNs(), memoryNs);
    s.low = socketOnly(s.low);
    s.high = socketOnly(s.high);
    s.finished = true;
    s.retired = true;
    s.connectionId = null;
    s.baseConnectionId = null;
    s.emittedEdgeKey = null;
    s.horizonTimer = 0;
    s.cleanupTimer = 0;
    s.idleTimer = 0;
  }

  static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }

  private static Side socketOnly(Side full) {
    if (full == null) {
      return null;
    }
    Side s = new Side();
    s.hostId = full.hostId;
    s.socketCookie = full.socketCookie;
    s.closed = true;
    return s;
  }

  /** Idle expiry: report the connection as finished (its edge keeps it in the totals). */
  private void retire(ConnectionState s, long now, Collector<ConnectionUpdate> out) {
    finish(s, now, out);
    idleExpired.inc();
    s.horizonTimer = 0;
    s.cleanupTimer = 0;
    if (s.emittedEdgeKey != null) {
      ConnectionUpdate last = ConnectionView.of(s);
      s.baselineClientToServer += last.bytesClientToServer;
      s.baselineServerToClient += last.bytesServerToClient;
    }
    s.retired = true;
  }

  /**
   * A retired connection's socket reported again: continue as a new generation from the baseline.
   * A withheld connection was never on an edge, so it goes on as the same one.
   */
  private static void revive(ConnectionState s) {
    s.retired = false;
    if (s.emittedEdgeKey == null) {
      return;
    }
    s.generation++;
    s.connectionId = s.baseConnectionId + "#" + s.generation;
    s.emittedEdgeKey = null;
  }

  void expireHorizon(ConnectionState s, long now, Collector<ConnectionUpdate> out) {
    s.horizonPassed = true;
    if (withholdIfPeerSheds(s, now)) {
      return;
    }
    emittedOneSided.inc();
    emit(s, out);
  }

  /**
   * A lone end whose peer host sheds, and whose server is not known by endpoint (looked up
   * first: {@link #resolveServer}): a connection the peer's hash did not keep. It cannot go on its
   * real edge (the process at the other end is unknown) and as an External edge it would be a
   * phantom node. A lone server end is one its client did not keep, which the client's kept
   * connections stand for; a lone client end is missing from the estimate until its endpoint is
   * known (retried when it finishes). Kept in state all the same: a heavy connection the peer shed
   * is still reported by it (keepProbability 0) and then pairs.
   */
  private boolean withholdIfPeerSheds(ConnectionState s, long now) {
    resolveServer(s);
    if (!s.withheld && !s.paired() && s.resolvedServer == null) {
      Side lone = s.low != null ? s.low : s.high;
      if (peers.sheds(PeerMemory.hostKey(lone.hostId, lone.remoteIp), now)) {
        s.withheld = true;
        withheldByPeer.inc();
        WITHHELD_BY_SHEDDING_PEER.incrementAndGet();
      }
    }
    return s.withheld && s.emittedEdgeKey == null;
  }

  void scheduleCleanupIfDone(ConnectionState s, long now) {
    if (s.cleanupTimer == 0 && s.memoryUntil == 0 && !s.retired && s.allPresentClosed()
        && (s.paired() || s.horizonPassed)) {
      s.cleanupTimer = now + cleanupDelayMs;
    }
  }

  /**
   * Ends this connection instance: make sure it was reported once (unless withheld: then it never
   * was on an edge, and nothing is emitted), then mark it finished.
   */
  private void finish(ConnectionState s, long now, Collector<ConnectionUpdate> out) {
    if (report(s, now, out)) {
      out.collect(ConnectionUpdate.marker(ConnectionUpdate.Type.FINISHED, s.connectionId, s.emittedEdgeKey));
    }
  }

  /** Puts a connection not reported yet on its edge, unless withheld; whether it is on an edge. */
  private boolean report(ConnectionState s, long now, Collector<ConnectionUpdate> out) {
    if (s.emittedEdgeKey == null) {
      s.horizonPassed = true;
      if (withholdIfPeerSheds(s, now)) {
        return false;
      }
      emit(s, out);
    }
    return true;
  }

  /** Emits the connection on its current edge, retracting it from the previous edge if it moved. */
  private void emit(ConnectionState s, Collector<ConnectionUpdate> out) {
    ConnectionUpdate u = ConnectionView.of(s);
    if (s.emittedEdgeKey != null && !s.emittedEdgeKey.equals(u.edgeKey)) {
      out.collect(ConnectionUpdate.marker(ConnectionUpdate.Type.RETRACT, s.connectionId, s.emittedEdgeKey));
    }
    s.emittedEdgeKey = u.edgeKey;
    s.withheld = false;
    out.collect(u);
  }

  /**
   * A lone client end whose remote endpoint a paired connection showed served by a process: the
   * connection goes on that process's edge rather than on an External node (or withheld, when its
   * peer sheds). Under shedding this is how a connection the server's agent did not keep still
   * counts, with the client's own weight.
   */
  private void resolveServer(ConnectionState s) {
    if (s.paired() || s.resolvedServer != null) {
      return;
    }
    Side lone = s.low != null ? s.low : s.high;
    if (lone == null || lone.role != Role.CLIENT) {
      return;
    }
    Side server = peers.server(lone.hostId, lone.remoteIp, lone.remotePort);
    if (server != null) {
      s.resolvedServer = server;
      resolvedByEndpoint.inc();
    }
  }
}
