package io.wattgraph.stream.transaction;

import io.wattgraph.stream.Transaction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The second chance of a record {@link TransactionEdges} could not pair: the agents decide client-port
 * masking each for its own end (a short connection is merged into its process's port-0 record unless
 * it outlived an interval), so on a loaded machine one end of a short connection can be merged while
 * the other reports it on its own, and the two never meet on one connection key. Keyed by the client
 * IP and the server endpoint, this operator knows the processes of both roles from every record's
 * first appearance on its own key, and gives an unpaired record the other role's process when
 * exactly one was seen there (one client process on that IP calling that server, one server process
 * behind it); else the record counts for the External node as before. A record waits for the watermark
 * to reach its timestamp (its window's last ms), so every process note of its window, from every
 * subtask of {@link TransactionEdges}, has arrived. A record counted for the External node is moved to
 * its real edge when its other end reports on its connection later, while its window can still be
 * revised ({@link ExternalEnds}).
 */
public class MaskedPeers extends KeyedProcessFunction<String, PeerNote, EdgeInput> {
  private static final long serialVersionUID = 1L;
  /** A role seen with two processes on the key: not one to pair with. */
  static final String AMBIGUOUS = "*";

  private final long retentionMs;
  private final long windowMs;
  private final ExternalEnds externalEnds;
  private transient ValueState<String> clientProcess;
  private transient ValueState<String> serverProcess;
  private transient ListState<Transaction> waiting;
  private transient Counter paired;
  private transient Counter moved;

  /** @param allowedLatenessMs the edge windows': how long a record counted for External may still be moved */
  public MaskedPeers(long retentionMs, long windowMs, long allowedLatenessMs) {
    this.retentionMs = retentionMs;
    this.windowMs = windowMs;
    this.externalEnds = new ExternalEnds(windowMs, allowedLatenessMs);
  }

  @Override
  public void open(OpenContext openContext) {
    clientProcess = TtlStrings.state(getRuntimeContext(), "masked-client", retentionMs);
    serverProcess = TtlStrings.state(getRuntimeContext(), "masked-server", retentionMs);
    waiting = getRuntimeContext().getListState(new ListStateDescriptor<>("masked-waiting", Transaction.STATE_TYPE));
    paired = getRuntimeContext().getMetricGroup().counter("maskedPeersPaired");
    moved = getRuntimeContext().getMetricGroup().counter("transactionEndsMovedFromExternal");
    externalEnds.open(getRuntimeContext());
  }

  @Override
  public void processElement(PeerNote n, Context ctx, Collector<EdgeInput> out) throws Exception {
    if (n.unpaired == null) {
      ValueState<String> role = n.client ? clientProcess : serverProcess;
      String known = role.value();
      if (known == null) {
        role.update(n.processId);
      } else if (!known.equals(n.processId) && !AMBIGUOUS.equals(known)) {
        role.update(AMBIGUOUS);
      }
      moved.inc(externalEnds.peerSeen(n.client, n.connectionKey, n.processId, waiting.get(), ctx.timerService()));
      return;
    }
    long release = PendingRelease.releaseTime(n.unpaired.eventTimeMs(), windowMs);
    if (peer(n.unpaired) != null || release <= ctx.timerService().currentWatermark()) {
      release(n.unpaired, ctx.timerService(), out);
      return;
    }
    waiting.add(n.unpaired);
    ctx.timerService().registerEventTimeTimer(release);
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<EdgeInput> out) throws Exception {
    externalEnds.move(timestamp, out);
    for (Transaction t : PendingRelease.due(waiting, timestamp, windowMs)) {
      release(t, ctx.timerService(), out);
    }
    Iterable<Transaction> left = waiting.get();
    if (left == null || !left.iterator().hasNext()) {
      externalEnds.noneWaiting();
    }
    externalEnds.expire(timestamp);
  }

  private void release(Transaction t, TimerService timers, Collector<EdgeInput> out) throws Exception {
    String exact = externalEnds.waitingPeer(t);
    EdgeInput e = exact == null ? edge(t)
        : TransactionEdges.edge(t, t.isClient() ? t.processId() : exact, t.isClient() ? exact : t.processId());
    out.collect(e);
    if (EdgeInput.EXTERNAL.equals(t.isClient() ? e.serverKind : e.clientKind)) {
      externalEnds.counted(t, timers);
    }
  }

  /** The other role's one process on this key, or null. */
  private String peer(Transaction t) throws Exception {
    String p = (t.isClient() ? serverProcess : clientProcess).value();
    return AMBIGUOUS.equals(p) ? null : p;
  }

  private EdgeInput edge(Transaction t) throws Exception {
    String peer = peer(t);
    if (peer != null) {
      paired.inc();
    }
    return TransactionEdges.edge(t, t.isClient() ? t.processId() : peer, t.isClient() ? peer : t.processId());
  }

  public static final class ByMaskedKey implements KeySelector<PeerNote, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(PeerNote n) {
      return n.maskedKey;
    }
  }
}
