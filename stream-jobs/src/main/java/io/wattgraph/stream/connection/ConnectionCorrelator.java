package io.wattgraph.stream.connection;

import io.wattgraph.stream.ConnectionState;
import io.wattgraph.stream.Side;
import io.wattgraph.stream.source.Observation;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
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
 * <p>BlackBox's Data Processor (§4.2) looks up the matching remote socket in the graph store; here
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
 * connections it stands for ({@code ConnectionView.weight}, by the client end's probability). A lone client end
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
  public static final AtomicLong DUPLICATES_DROPPED = ConnectionLifecycle.DUPLICATES_DROPPED;
  /**
   * Ends that found no instance to join and are older than the memory of the input's progress, over
   * every subtask of this JVM (tests read it): each may be the late peer of a lone end already
   * counted and forgotten.
   */
  static final AtomicLong LATE_PAST_MEMORY = new AtomicLong();
  /** Lone ends withheld because their peer sheds, over every subtask of this JVM (tests read it). */
  public static final AtomicLong WITHHELD_BY_SHEDDING_PEER = ConnectionLifecycle.WITHHELD_BY_SHEDDING_PEER;

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
  /** Hosts seen shedding and server endpoints seen in pairs (operator state). */
  private transient PeerMemory peers;
  /** What happens to an instance: events applied, deadlines, emissions. */
  private transient ConnectionLifecycle life;
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
    life = new ConnectionLifecycle(horizonMs, cleanupDelayMs, idleTimeoutMs, duplicateHorizonMs, peers,
        getRuntimeContext().getMetricGroup());
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
      life.apply(s, o, isLow, now, out);
    } else if (!s.hasEarlier && endOf(s, o, isLow)) {
      // The common case: one instance on the tuple, and this is one of its ends.
      if (!life.apply(s, o, isLow, now, out)) {
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
    if (!life.apply(target, o, isLow, now, out)) {
      return null;
    }
    if (created) {
      if (o.eventTimeNs >= newest.startNs()) {
        // A later connection on the tuple: the newest so far is over. An idle-expired one was
        // already folded into its edge and is forgotten, as before; any other is kept as earlier.
        if (!newest.retired || newest.finished) {
          newest.superseded();
          life.scheduleCleanupIfDone(newest, now);
          earlier.add(newest);
        }
        target.timerAt = newest.timerAt;
        newest.timerAt = 0;
        newest.hasEarlier = false;
        newest.earlierDeadline = 0;
        newest = target;
      } else {
        target.superseded();
        life.scheduleCleanupIfDone(target, now);
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
          life.expireHorizon(inst, now, out);
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
    boolean newestGone = life.advance(s, now, progressNs, out);
    List<ConnectionState> earlier = null;
    if (s.hasEarlier && (newestGone || s.earlierDeadline == 0 || now >= s.earlierDeadline)) {
      earlier = loadEarlier(s);
      for (Iterator<ConnectionState> it = earlier.iterator(); it.hasNext(); ) {
        if (life.advance(it.next(), now, progressNs, out)) {
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

  /** The key: both ends of a connection share the sorted endpoint pair. */
  public static final class ByConnection implements KeySelector<Observation, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Observation o) {
      return o.connectionKey();
    }
  }
}
