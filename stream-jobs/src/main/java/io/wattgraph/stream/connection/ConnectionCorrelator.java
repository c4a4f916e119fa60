package io.wattgraph.stream.connection;

import io.wattgraph.stream.ConnectionState;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.Side;
import io.wattgraph.stream.source.Observation;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Pairs the two hosts' observations of one TCP connection (keyed by the sorted endpoint pair).
 *
 * <p>The paper's Data Processor (§4.2) looks up the matching remote socket in the graph store; here
 * the match is keyed state instead, so it is exactly-once with checkpoints and needs no read from
 * Neo4j. Each side is the latest view of one socket (hostId + socket cookie). An update is emitted
 * once both sides are known, or once the pairing horizon passes with one side only (the missing
 * end becomes an External node). When the peer turns up later, the connection moves to the real
 * edge and the External edge gets a retraction. Counters are cumulative and merged with max, so the
 * order of one end's events does not matter.
 *
 * <p>Late ends (agents spool through outages and deliver in bursts): a closed lone end is not
 * finished at the closed retention but kept whole for the memory ({@code duplicateHorizonMs} of
 * processing time and of the input's event-time progress), so its peer, however late within it,
 * pairs with it and moves it to its real edge. A 4-tuple reused meanwhile holds several instances,
 * and an end joins the one whose lone end overlaps it in time ({@link #peerOf}). An end older than
 * the memory is counted ({@code latePeersPastMemory}).
 *
 * <p>Load shedding (ConnectionEvent v3 {@code keepProbability}): each update carries the number of
 * connections it stands for ({@link #weight}, by the client end's probability). A lone client end
 * goes on the edge of the process paired connections showed serving its remote endpoint
 * ({@link ConnectionState#resolvedServer}); a lone end whose peer host is shedding and which cannot
 * be put so is not made an External edge at the horizon ({@link ConnectionState#withheld}). The
 * hosts seen shedding and the server endpoints are operator state (union list state, so every
 * subtask has them all after a restore).
 */
public class ConnectionCorrelator extends KeyedProcessFunction<String, Observation, ConnectionUpdate>
    implements CheckpointedFunction {
  private static final long serialVersionUID = 1L;

  /** Replayed observations dropped by a tombstone, over every subtask of this JVM (tests read it). */
  public static final java.util.concurrent.atomic.AtomicLong DUPLICATES_DROPPED = new java.util.concurrent.atomic.AtomicLong();
  /**
   * Ends that found no instance to join and are older than the memory of the input's progress, over
   * every subtask of this JVM (tests read it): each may be the late peer of a lone end already
   * counted and forgotten.
   */
  static final java.util.concurrent.atomic.AtomicLong LATE_PAST_MEMORY = new java.util.concurrent.atomic.AtomicLong();
  /** Lone ends withheld because their peer sheds, over every subtask of this JVM (tests read it). */
  public static final java.util.concurrent.atomic.AtomicLong WITHHELD_BY_SHEDDING_PEER = new java.util.concurrent.atomic.AtomicLong();

  /** Default of {@code --shedding-peer-memory-ms}: how long a host is known to shed after its last sampled event. */
  public static final long DEFAULT_SHEDDING_PEER_MEMORY_MS = 600_000;

  /**
   * How much later than a lone end's close (or earlier than its start) a new end on its 4-tuple must
   * start to be another connection rather than its peer: more than the agents' clocks differ (NTP
   * keeps them within milliseconds); less than a tuple takes to be reused (TIME_WAIT is 60 s; only
   * reset connections come back within seconds).
   */
  static final long TUPLE_REUSE_SKEW_NS = 1_000_000_000L;

  /** An event-time timer at the end of time fires only on end of input (bounded run or drain). */
  static final long END_OF_INPUT = Long.MAX_VALUE;

  private final long horizonMs;
  private final long cleanupDelayMs;
  private final long idleTimeoutMs;
  private final long duplicateHorizonMs;
  private final long sheddingPeerMemoryMs;
  /** The duplicate horizon (the memory of closed connections) in ns of event time. */
  private final long memoryNs;
  /** How often a memory whose processing time passed but whose input has not checks again. */
  private final long memoryFloorMs;

  /** The newest instance of the key's 4-tuple. */
  private transient ValueState<ConnectionState> state;
  /** Older instances of the tuple still remembered (reused while a lone end waits, tombstones). */
  private transient ListState<ConnectionState> earlierState;
  /**
   * The input's progress: the latest event time this subtask has seen (ns). The memory is measured
   * in it as well as in processing time, so a stalled input (Neo4j down and the job backpressured,
   * the job down, Kafka down for everyone) forgets nothing. Union operator state, the highest wins.
   */
  private transient long progressNs;
  private transient ListState<Long> progressState;
  private transient Counter latePastMemory;
  private transient Counter emittedOneSided;
  private transient Counter idleExpired;
  private transient Counter duplicates;
  private transient Counter withheldByPeer;
  /** Hosts seen shedding and server endpoints seen in pairs (operator state). */
  private transient PeerMemory peers;
  private transient Counter resolvedByEndpoint;
  /** The latest processing time seen, to expire entries before a snapshot. */
  private transient long latestNow;

  public ConnectionCorrelator(long horizonMs) {
    // Keep a closed connection a little longer than the horizon, so a straggling peer event still
    // finds it instead of starting a phantom one-sided connection.
    this(horizonMs, 2 * horizonMs, 3_600_000);
  }

  /**
   * @param closedRetentionMs how long a closed connection is remembered before its key is cleared
   * @param idleTimeoutMs a connection without any event for this long (its CLOSED was lost, or it
   *     is idle) is folded into its edge's totals; its key is cleared after one more such period
   */
  public ConnectionCorrelator(long horizonMs, long closedRetentionMs, long idleTimeoutMs) {
    this(horizonMs, closedRetentionMs, idleTimeoutMs, 0);
  }

  /**
   * @param duplicateHorizonMs how long the sockets of a forgotten closed connection are still
   *     recognised (a tombstone), so that an agent's replay of their events is dropped; 0: not at all
   */
  public ConnectionCorrelator(long horizonMs, long closedRetentionMs, long idleTimeoutMs, long duplicateHorizonMs) {
    this(horizonMs, closedRetentionMs, idleTimeoutMs, duplicateHorizonMs, DEFAULT_SHEDDING_PEER_MEMORY_MS);
  }

  /**
   * @param sheddingPeerMemoryMs how long a host counts as shedding after its last sampled
   *     observation (a lone end towards it is then withheld at the horizon); 0: never
   */
  public ConnectionCorrelator(long horizonMs, long closedRetentionMs, long idleTimeoutMs, long duplicateHorizonMs,
      long sheddingPeerMemoryMs) {
    if (horizonMs <= 0 || closedRetentionMs <= 0 || idleTimeoutMs <= 0 || duplicateHorizonMs < 0
        || sheddingPeerMemoryMs < 0) {
      throw new IllegalArgumentException("pairing horizon, closed retention and idle timeout must be > 0 ms, "
          + "the duplicate horizon and shedding peer memory >= 0 ms, got " + horizonMs + ", " + closedRetentionMs
          + ", " + idleTimeoutMs + ", " + duplicateHorizonMs + ", " + sheddingPeerMemoryMs);
    }
    this.horizonMs = horizonMs;
    this.cleanupDelayMs = closedRetentionMs;
    this.idleTimeoutMs = idleTimeoutMs;
    this.duplicateHorizonMs = duplicateHorizonMs;
    this.sheddingPeerMemoryMs = sheddingPeerMemoryMs;
    this.memoryNs = duplicateHorizonMs > Long.MAX_VALUE / 1_000_000 ? Long.MAX_VALUE : duplicateHorizonMs * 1_000_000;
    this.memoryFloorMs = Math.max(1, duplicateHorizonMs / 4);
  }

  @Override
  public void initializeState(FunctionInitializationContext context) throws Exception {
    peers = new PeerMemory(sheddingPeerMemoryMs);
    peers.initialize(context);
    progressState = context.getOperatorStateStore().getUnionListState(
        new ListStateDescriptor<>("input-progress", Types.LONG));
    progressNs = 0;
    if (context.isRestored()) {
      for (Long p : progressState.get()) {
        progressNs = Math.max(progressNs, p);
      }
    }
  }

  @Override
  public void snapshotState(FunctionSnapshotContext context) throws Exception {
    peers.snapshot(latestNow);
    progressState.update(List.of(progressNs));
  }

  @Override
  public void open(OpenContext openContext) {
    state = getRuntimeContext().getState(new ValueStateDescriptor<>("connection", ConnectionState.class));
    earlierState = getRuntimeContext().getListState(new ListStateDescriptor<>("earlier-instances", ConnectionState.class));
    emittedOneSided = getRuntimeContext().getMetricGroup().counter("oneSidedConnections");
    idleExpired = getRuntimeContext().getMetricGroup().counter("idleExpiredConnections");
    duplicates = getRuntimeContext().getMetricGroup().counter("duplicateObservationsDropped");
    withheldByPeer = getRuntimeContext().getMetricGroup().counter("oneSidedShedByPeer");
    resolvedByEndpoint = getRuntimeContext().getMetricGroup().counter("oneSidedResolvedByServerEndpoint");
    latePastMemory = getRuntimeContext().getMetricGroup().counter("latePeersPastMemory");
  }

  @Override
  public void processElement(Observation o, Context ctx, Collector<ConnectionUpdate> out) throws Exception {
    boolean isLow = o.localIsLow();
    long now = ctx.timerService().currentProcessingTime();
    latestNow = Math.max(latestNow, now);
    progressNs = Math.max(progressNs, o.eventTimeNs);
    if (o.keepProbability < 1 && sheddingPeerMemoryMs > 0) {
      peers.sheddingSeen(PeerMemory.hostKey(o.hostId, o.localIp), now);
    }
    ConnectionState s = state.value();
    if (s == null) {
      s = newInstance(o, ctx);
      apply(s, o, isLow, now, out);
    } else if (!s.hasEarlier && endOf(s, o, isLow)) {
      // The common case: one instance on the tuple, and this is one of its ends.
      if (!apply(s, o, isLow, now, out)) {
        return;
      }
    } else {
      s = place(s, o, isLow, now, ctx, out);
      if (s == null) {
        return;
      }
    }
    arm(s, ctx);
    state.update(s);
  }

  /** Whether {@code o} is an end of {@code inst}: one of its sockets, or the peer its lone end waits for. */
  private static boolean endOf(ConnectionState inst, Observation o, boolean isLow) {
    Side existing = inst.side(isLow);
    if (existing != null) {
      return existing.sameSocket(o);
    }
    return !inst.finished && peerOf(o, inst.side(!isLow));
  }

  /**
   * Whether {@code o}, the first event of a socket, can be the other end of {@code lone}: the two
   * ends of one connection overlap in time, within the agents' clock skew ({@link
   * #TUPLE_REUSE_SKEW_NS}). An end that begins after the lone end closed, or before it began, belongs
   * to another connection on the same 4-tuple (reused ports).
   */
  static boolean peerOf(Observation o, Side lone) {
    return lone != null && o.eventTimeNs >= lone.firstSeenNs - TUPLE_REUSE_SKEW_NS
        && (!lone.closed || o.eventTimeNs <= lone.lastSeenNs + TUPLE_REUSE_SKEW_NS);
  }

  /**
   * The tuple holds several instances, or {@code o} is not an end of its newest: find the instance
   * whose socket it is, else the one whose lone end it pairs with (the closest start in time), else
   * start a new one, the newest if it began after the newest so far (which is then over), an earlier
   * one otherwise (a late end of an earlier connection). Returns the newest, or null when {@code o}
   * was a dropped replay.
   */
  private ConnectionState place(ConnectionState newest, Observation o, boolean isLow, long now, Context ctx,
      Collector<ConnectionUpdate> out) throws Exception {
    List<ConnectionState> earlier = loadEarlier(newest);
    ConnectionState target = null;
    for (ConnectionState inst : earlier) {
      if (inst.side(isLow) != null && inst.side(isLow).sameSocket(o)) {
        target = inst;
      }
    }
    if (target == null && newest.side(isLow) != null && newest.side(isLow).sameSocket(o)) {
      target = newest;
    }
    if (target == null) {
      long best = Long.MAX_VALUE;
      for (int i = 0; i <= earlier.size(); i++) {
        ConnectionState inst = i < earlier.size() ? earlier.get(i) : newest;
        if (inst.side(isLow) == null && endOf(inst, o, isLow)) {
          long distance = Math.abs(o.eventTimeNs - inst.startNs());
          if (distance < best) {
            best = distance;
            target = inst;
          }
        }
      }
    }
    boolean created = target == null;
    if (created) {
      target = newInstance(o, ctx);
    }
    if (!apply(target, o, isLow, now, out)) {
      return null;
    }
    if (created) {
      if (o.eventTimeNs >= newest.startNs()) {
        // A later connection on the tuple: the newest so far is over. An idle-expired one was
        // already folded into its edge and is forgotten, as before; any other is kept as earlier.
        if (!newest.retired || newest.finished) {
          newest.superseded();
          scheduleCleanupIfDone(newest, now);
          earlier.add(newest);
        }
        target.timerAt = newest.timerAt;
        newest.timerAt = 0;
        newest.hasEarlier = false;
        newest.earlierDeadline = 0;
        newest = target;
      } else {
        target.superseded();
        scheduleCleanupIfDone(target, now);
        earlier.add(target);
      }
    }
    storeEarlier(newest, earlier);
    return newest;
  }

  private ConnectionState newInstance(Observation o, Context ctx) {
    ConnectionState s = new ConnectionState();
    s.connectionId = ctx.getCurrentKey() + "@" + o.hostId + "/" + o.socketCookie;
    s.baseConnectionId = s.connectionId;
    // Once per key, not per event (a no-op when the key has it); deleted with the key's state.
    ctx.timerService().registerEventTimeTimer(END_OF_INPUT);
    if (duplicateHorizonMs > 0 && o.eventTimeNs < progressNs - memoryNs + TUPLE_REUSE_SKEW_NS) {
      // Older than the memory of the input's progress: a lone end it would have paired with may be
      // forgotten already, counted on its own edge. Counted here, never silently twice.
      latePastMemory.inc();
      LATE_PAST_MEMORY.incrementAndGet();
    }
    return s;
  }

  /** Applies an end's event to its instance; false for a replay of a finished one (dropped). */
  private boolean apply(ConnectionState s, Observation o, boolean isLow, long now, Collector<ConnectionUpdate> out) {
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
      Side server = s.side(!clientIsLow(s.low, s.high));
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

  private List<ConnectionState> loadEarlier(ConnectionState newest) throws Exception {
    List<ConnectionState> earlier = new ArrayList<>();
    if (newest.hasEarlier) {
      for (ConnectionState inst : earlierState.get()) {
        earlier.add(inst);
      }
    }
    return earlier;
  }

  private void storeEarlier(ConnectionState newest, List<ConnectionState> earlier) throws Exception {
    long deadline = 0;
    for (ConnectionState inst : earlier) {
      deadline = ConnectionState.earliest(deadline, inst.nextDeadline());
    }
    newest.hasEarlier = !earlier.isEmpty();
    newest.earlierDeadline = deadline;
    if (earlier.isEmpty()) {
      earlierState.clear();
    } else {
      earlierState.update(earlier);
    }
  }

  /**
   * Registers a timer at the key's earliest deadline unless one at or before it is pending: one
   * timer per key at a time, not one per deadline (the timer queue was a fifth of the job's CPU).
   */
  private static void arm(ConnectionState s, Context ctx) {
    long next = ConnectionState.earliest(s.nextDeadline(), s.earlierDeadline);
    if (next != 0 && (s.timerAt == 0 || next < s.timerAt)) {
      s.timerAt = next;
      ctx.timerService().registerProcessingTimeTimer(next);
    }
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<ConnectionUpdate> out) throws Exception {
    ConnectionState s = state.value();
    if (s == null) {
      return;
    }
    long now = ctx.timerService().currentProcessingTime();
    latestNow = Math.max(latestNow, now);
    if (ctx.timeDomain() == TimeDomain.EVENT_TIME) {
      // Input ended: nobody else will turn up, so report what a live run would after the horizon.
      List<ConnectionState> earlier = loadEarlier(s);
      earlier.add(s);
      for (ConnectionState inst : earlier) {
        if (!inst.retired && !inst.paired() && !inst.horizonPassed) {
          expireHorizon(inst, now, out);
        }
      }
      earlier.remove(earlier.size() - 1);
      if (s.hasEarlier) {
        earlierState.update(earlier);
      }
      state.update(s);
      return;
    }
    if (timestamp == s.timerAt) {
      s.timerAt = 0;
    }
    // Whatever is due by now (a timer left from an earlier deadline or connection finds nothing).
    boolean newestGone = advance(s, now, out);
    List<ConnectionState> earlier = null;
    if (s.hasEarlier && (newestGone || s.earlierDeadline == 0 || now >= s.earlierDeadline)) {
      earlier = loadEarlier(s);
      for (Iterator<ConnectionState> it = earlier.iterator(); it.hasNext(); ) {
        if (advance(it.next(), now, out)) {
          it.remove();
        }
      }
    }
    if (newestGone) {
      if (earlier == null || earlier.isEmpty()) {
        forget(s, ctx);
        return;
      }
      // The latest of the earlier instances becomes the newest.
      ConnectionState next = earlier.get(0);
      for (ConnectionState inst : earlier) {
        if (inst.startNs() > next.startNs()) {
          next = inst;
        }
      }
      earlier.remove(next);
      next.timerAt = s.timerAt;
      s = next;
    }
    if (earlier != null) {
      storeEarlier(s, earlier);
    }
    if (s.finished && !s.hasEarlier) {
      // Only a replay's tombstone is left: nothing to report at end of input.
      ctx.timerService().deleteEventTimeTimer(END_OF_INPUT);
    }
    arm(s, ctx);
    state.update(s);
  }

  /** Applies an instance's deadlines that are due; true when it is to be forgotten. */
  private boolean advance(ConnectionState s, long now, Collector<ConnectionUpdate> out) {
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

  /**
   * Clears the key's state and its timers. A timer left behind would keep every tuple ever seen in
   * the timer queue of an unbounded job.
   */
  private void forget(ConnectionState s, Context ctx) {
    if (s.timerAt != 0) {
      ctx.timerService().deleteProcessingTimeTimer(s.timerAt);
    }
    state.clear();
    earlierState.clear();
    ctx.timerService().deleteEventTimeTimer(END_OF_INPUT);
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
      ConnectionUpdate last = view(s);
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

  private void expireHorizon(ConnectionState s, long now, Collector<ConnectionUpdate> out) {
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

  private void scheduleCleanupIfDone(ConnectionState s, long now) {
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
    ConnectionUpdate u = view(s);
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

  /** The connection as the graph should show it now. */
  static ConnectionUpdate view(ConnectionState s) {
    boolean clientIsLow = clientIsLow(s.low, s.high);
    Side c = s.side(clientIsLow);
    Side v = s.side(!clientIsLow);
    ConnectionUpdate u = new ConnectionUpdate();
    u.type = ConnectionUpdate.Type.UPSERT;
    u.connectionId = s.connectionId;
    u.client = c != null ? GraphNode.process(c) : GraphNode.externalClient(v.remoteIp);
    u.server = v != null ? GraphNode.process(v)
        : s.resolvedServer != null ? GraphNode.process(s.resolvedServer)
        : GraphNode.externalServer(c.remoteIp, c.remotePort);
    u.edgeKey = GraphNode.edgeKey(u.client, u.server);
    // Each end counts the same payload; an agent may have missed some (started late), so take max.
    // Minus what earlier generations (before an idle expiry) already folded into the totals.
    u.bytesClientToServer = Math.max(0, Math.max(c == null ? 0 : c.bytesSent, v == null ? 0 : v.bytesReceived)
        - s.baselineClientToServer);
    u.bytesServerToClient = Math.max(0, Math.max(v == null ? 0 : v.bytesSent, c == null ? 0 : c.bytesReceived)
        - s.baselineServerToClient);
    u.continuation = s.generation > 0;
    // Not counted again (continuation), else how many connections this one stands for.
    u.weight = u.continuation ? 0 : weight(c, v);
    u.firstSeenNs = Math.min(c == null ? Long.MAX_VALUE : c.firstSeenNs, v == null ? Long.MAX_VALUE : v.firstSeenNs);
    u.lastSeenNs = Math.max(c == null ? Long.MIN_VALUE : c.lastSeenNs, v == null ? Long.MIN_VALUE : v.lastSeenNs);
    return u;
  }

  /**
   * Horvitz-Thompson weight: 1 / the probability with which the connection is counted. A connection
   * is counted when its client end reported it, whether the server end did or not (a lone client
   * end is put on its server's edge by endpoint, or withheld): probability p_client. Weighing by
   * the client keeps a small client of a big, heavily sampled server exact (pairs alone are seen
   * at min(p_client, p_server)). Without a client end (its agent is not there), the server's own
   * p. p = 0 (shed, reported for its bytes) stands for no connection: the kept ones stand for it.
   */
  static double weight(Side client, Side server) {
    double p = client != null ? client.keepProbability : server.keepProbability;
    return p > 0 ? 1 / p : 0;
  }

  /**
   * Whether the low endpoint is the client: a known role on either side decides; with both roles
   * UNKNOWN the sorted order does (the low endpoint is taken as client), as in the Kafka key.
   */
  static boolean clientIsLow(Side low, Side high) {
    Role lo = low == null ? Role.UNKNOWN : low.role;
    Role hi = high == null ? Role.UNKNOWN : high.role;
    if (lo == Role.CLIENT || hi == Role.SERVER) {
      return true;
    }
    if (lo == Role.SERVER || hi == Role.CLIENT) {
      return false;
    }
    return true;
  }

  /** The key: both ends of a connection share the sorted endpoint pair. */
  public static final class ByConnection implements KeySelector<Observation, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Observation o) {
      return o.connectionKey();
    }
  }
}
