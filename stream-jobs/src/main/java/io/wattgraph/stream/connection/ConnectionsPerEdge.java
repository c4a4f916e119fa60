package io.wattgraph.stream.connection;

import io.wattgraph.stream.ConnectionStats;
import io.wattgraph.stream.EdgeTotals;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Sums the connections of one edge (keyed by client/server node pair) into absolute totals.
 *
 * <p>Absolute values, not increments, go to the sink: writing one twice or out of a replay leaves
 * the same graph. An edge whose connections were all retracted (moved elsewhere) is deleted.
 *
 * <p>First and last seen after a retraction are recomputed over what is left once per
 * {@link #SEEN_SETTLE_MS}, not per retraction: late peers from a spool retract thousands of lone ends
 * from one External edge in a burst, each the edge's earliest, and a pass over the edge's live
 * connections for each was quadratic. Counts and bytes are exact in every row; first/last seen in
 * the row after the settle.
 */
public class ConnectionsPerEdge extends KeyedProcessFunction<String, ConnectionUpdate, EdgeRow> {
  private static final long serialVersionUID = 1L;
  /** How long after a retraction first/last seen are recomputed: the sink's flush interval. */
  static final long SEEN_SETTLE_MS = 200;
  /** Passes over an edge's live connections, over every subtask of this JVM (tests read it). */
  static final java.util.concurrent.atomic.AtomicLong SEEN_RECOMPUTED = new java.util.concurrent.atomic.AtomicLong();

  private transient ValueState<EdgeTotals> totals;
  private transient MapState<String, ConnectionStats> live;

  @Override
  public void open(OpenContext openContext) {
    totals = getRuntimeContext().getState(new ValueStateDescriptor<>("totals", EdgeTotals.class));
    live = getRuntimeContext().getMapState(
        new MapStateDescriptor<>("connections", String.class, ConnectionStats.class));
  }

  @Override
  public void processElement(ConnectionUpdate u, Context ctx, Collector<EdgeRow> out) throws Exception {
    EdgeTotals t = totals.value();
    switch (u.type) {
      case UPSERT -> {
        if (t == null) {
          t = new EdgeTotals();
        }
        ConnectionStats old = live.get(u.connectionId);
        boolean counted;
        if (old == null) {
          counted = !u.continuation;
          if (counted) {
            t.count(1, u.weight);
          }
          old = new ConnectionStats();
        } else {
          counted = old.counted;
          if (counted && old.weight != u.weight) {
            // E.g. a lone server end (1 / p_server) whose client end joined (1 / p_client): the new weight replaces the old.
            t.count(-1, old.weight);
            t.count(1, u.weight);
          }
        }
        t.bytesClientToServer += u.bytesClientToServer - old.bytesClientToServer;
        t.bytesServerToClient += u.bytesServerToClient - old.bytesServerToClient;
        t.firstSeenNs = Math.min(t.firstSeenNs, u.firstSeenNs);
        t.lastSeenNs = Math.max(t.lastSeenNs, u.lastSeenNs);
        // Latest node properties win (e.g. a process whose cmdline became readable), except that
        // a connection that never learnt them does not erase what another one knew.
        t.client = GraphNode.keepingKnown(u.client, t.client);
        t.server = GraphNode.keepingKnown(u.server, t.server);
        ConnectionStats now = ConnectionStats.of(u);
        now.counted = counted;
        live.put(u.connectionId, now);
        totals.update(t);
        out.collect(EdgeRow.upsert(ctx.getCurrentKey(), t));
      }
      case RETRACT -> {
        ConnectionStats old = t == null ? null : live.get(u.connectionId);
        if (old == null) {
          return;
        }
        live.remove(u.connectionId);
        if (old.counted) {
          t.count(-1, old.weight);
        }
        if (t.connections <= 0 && live.isEmpty()) {
          out.collect(EdgeRow.deletion(ctx.getCurrentKey(), t.client, t.server));
          totals.clear();
          live.clear();
          return;
        }
        t.bytesClientToServer -= old.bytesClientToServer;
        t.bytesServerToClient -= old.bytesServerToClient;
        if (!t.seenStale && (old.firstSeenNs <= t.firstSeenNs || old.lastSeenNs >= t.lastSeenNs)) {
          // It may have been the edge's first or last: settle once the retractions of this moment are in.
          t.seenStale = true;
          ctx.timerService().registerProcessingTimeTimer(ctx.timerService().currentProcessingTime() + SEEN_SETTLE_MS);
        }
        totals.update(t);
        out.collect(EdgeRow.upsert(ctx.getCurrentKey(), t));
      }
      case FINISHED -> {
        ConnectionStats old = t == null ? null : live.get(u.connectionId);
        if (old == null) {
          return;
        }
        // Over for good: it can no longer be retracted, so keep it only inside the totals.
        live.remove(u.connectionId);
        t.retiredFirstSeenNs = Math.min(t.retiredFirstSeenNs, old.firstSeenNs);
        t.retiredLastSeenNs = Math.max(t.retiredLastSeenNs, old.lastSeenNs);
        totals.update(t);
      }
      default -> throw new IllegalStateException("unknown update type " + u.type);
    }
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<EdgeRow> out) throws Exception {
    EdgeTotals t = totals.value();
    if (t == null || !t.seenStale) {
      return; // deleted meanwhile
    }
    recomputeSeen(t);
    t.seenStale = false;
    totals.update(t);
    out.collect(EdgeRow.upsert(ctx.getCurrentKey(), t));
  }

  /** Only after a retraction: first/last seen over what is still on the edge. */
  private void recomputeSeen(EdgeTotals t) throws Exception {
    SEEN_RECOMPUTED.incrementAndGet();
    long first = t.retiredFirstSeenNs;
    long last = t.retiredLastSeenNs;
    for (Map.Entry<String, ConnectionStats> e : live.entries()) {
      first = Math.min(first, e.getValue().firstSeenNs);
      last = Math.max(last, e.getValue().lastSeenNs);
    }
    t.firstSeenNs = first;
    t.lastSeenNs = last;
  }

  /** The key: the edge (client node, server node). */
  public static final class ByEdge implements KeySelector<ConnectionUpdate, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(ConnectionUpdate u) {
      return u.edgeKey;
    }
  }
}
