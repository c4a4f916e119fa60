package io.wattgraph.stream.transaction;

import io.wattgraph.stream.Transaction;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.util.Collector;

/**
 * {@link MaskedPeers}' memory of the records it counted for an External node because their other end
 * had not reported (keyed state of a masked key, by connection key and role), kept while their window
 * can still be revised: until the watermark passes the window's end plus the allowed lateness, as the
 * edge windows keep it. When that other end's process turns up on the connection key later (an agent
 * cut off from the broker, or restarted with its spool), each remembered record is moved: a
 * retraction on the External edge and the record on the real edge, both stamped with the record's
 * window's last ms, so both windows emit a revision that replaces their share (the connection path's
 * retraction of an External edge, for windows). They are emitted from a timer at that ms, already
 * passed, so at the next watermark and before it reaches the windows: a window about to close for
 * good still takes them. A note that overtakes a record still waiting for the watermark here gives the
 * record its process directly.
 */
final class ExternalEnds implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  private final long windowMs;
  private final long allowedLatenessMs;
  /** Role and connection key of the records ({@link #roleKey}) -> the records counted for External. */
  private transient MapState<String, List<Transaction>> external;
  /** Records to move at their window's timer, and the process of their other end by role key. */
  private transient ListState<Transaction> moving;
  private transient MapState<String, String> movingPeers;
  /** The process of a waiting record's other end, when its note overtook the record (by role key). */
  private transient MapState<String, String> waitingPeers;

  ExternalEnds(long windowMs, long allowedLatenessMs) {
    this.windowMs = windowMs;
    this.allowedLatenessMs = allowedLatenessMs;
  }

  /** The states' names are what checkpoints know them by: never change them. */
  void open(RuntimeContext context) {
    external = context.getMapState(
        new MapStateDescriptor<>("masked-external", Types.STRING, Types.LIST(Transaction.STATE_TYPE)));
    moving = context.getListState(new ListStateDescriptor<>("masked-moving", Transaction.STATE_TYPE));
    movingPeers = context.getMapState(new MapStateDescriptor<>("masked-moving-peers", Types.STRING, Types.STRING));
    waitingPeers = context.getMapState(new MapStateDescriptor<>("masked-waiting-peers", Types.STRING, Types.STRING));
  }

  /** {@code t} was counted for the External node of its other end: remembered while its window can change. */
  void counted(Transaction t, TimerService timers) throws Exception {
    String key = roleKey(t.isClient(), t.connectionKey());
    List<Transaction> records = external.get(key);
    if (records == null) {
      records = new ArrayList<>(1);
    }
    records.add(t);
    external.put(key, records);
    timers.registerEventTimeTimer(PendingRelease.releaseTime(t.eventTimeMs(), windowMs) + allowedLatenessMs);
  }

  /**
   * The first record of process {@code processId} in role {@code client} on {@code connectionKey}: the
   * other role's remembered records of that connection are moved to it at their windows' timers, and
   * those still {@code waiting} for the watermark here (the note overtook them) go to it when released.
   * Returns how many were moved.
   */
  int peerSeen(boolean client, String connectionKey, String processId, Iterable<Transaction> waiting,
      TimerService timers) throws Exception {
    String key = roleKey(!client, connectionKey);
    List<Transaction> records = external.get(key);
    if (records == null) {
      if (waiting != null) {
        for (Transaction t : waiting) {
          if (t.isClient() != client && t.connectionKey().equals(connectionKey)) {
            waitingPeers.put(key, processId);
            break;
          }
        }
      }
      return 0;
    }
    external.remove(key);
    movingPeers.put(key, processId);
    for (Transaction t : records) {
      moving.add(t);
      timers.registerEventTimeTimer(PendingRelease.releaseTime(t.eventTimeMs(), windowMs));
    }
    return records.size();
  }

  /** The moves due at {@code timestamp}: each a retraction from the External edge and the record on its real one. */
  void move(long timestamp, Collector<EdgeInput> out) throws Exception {
    List<Transaction> due = PendingRelease.due(moving, timestamp, windowMs);
    for (Transaction t : due) {
      String peer = movingPeers.get(roleKey(t.isClient(), t.connectionKey()));
      EdgeInput back = TransactionEdges.edge(t, t.isClient() ? t.processId() : null, t.isClient() ? null : t.processId());
      back.retraction = true;
      out.collect(back);
      out.collect(TransactionEdges.edge(t, t.isClient() ? t.processId() : peer, t.isClient() ? peer : t.processId()));
    }
    Iterable<Transaction> rest = moving.get();
    if (!due.isEmpty() && (rest == null || !rest.iterator().hasNext())) {
      movingPeers.clear();
    }
  }

  /** The process a waiting record's other end turned out to be on its own connection, or null. */
  String waitingPeer(Transaction t) throws Exception {
    return waitingPeers.isEmpty() ? null : waitingPeers.get(roleKey(t.isClient(), t.connectionKey()));
  }

  /** Nothing waits any more: what was learnt for waiting records is forgotten. */
  void noneWaiting() throws Exception {
    waitingPeers.clear();
  }

  /** Forgets the records whose window closed for good at {@code timestamp}: they stay on the External edge. */
  void expire(long timestamp) throws Exception {
    Iterator<Map.Entry<String, List<Transaction>>> it = external.iterator();
    while (it.hasNext()) {
      Map.Entry<String, List<Transaction>> e = it.next();
      List<Transaction> keep = new ArrayList<>();
      for (Transaction t : e.getValue()) {
        if (PendingRelease.releaseTime(t.eventTimeMs(), windowMs) + allowedLatenessMs > timestamp) {
          keep.add(t);
        }
      }
      if (keep.isEmpty()) {
        it.remove();
      } else if (keep.size() < e.getValue().size()) {
        e.setValue(keep);
      }
    }
  }

  /** A record's role and connection: where its other end's first record finds it. */
  private static String roleKey(boolean client, String connectionKey) {
    return (client ? "C " : "S ") + connectionKey;
  }
}
