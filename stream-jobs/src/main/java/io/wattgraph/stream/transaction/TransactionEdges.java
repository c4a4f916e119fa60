package io.wattgraph.stream.transaction;

import io.wattgraph.stream.SeenRecords;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.connection.GraphNode;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Pairs the two ends of a connection's TransactionStats into its edge, keyed by the sorted
 * endpoint pair (as {@code ConnectionCorrelator} keys ConnectionEvents): the CLIENT record names the
 * client process, the SERVER record the server process. A record whose other end is known goes on
 * at once as input of the edge client process -> server process. One whose other end has not
 * reported yet waits until the watermark reaches the end of its window ({@link PendingRelease}); if the
 * other end is still unknown then, the record goes to {@link MaskedPeers} ({@link #UNPAIRED}), which
 * pairs it when its peer end was merged into a client-port-0 record, else counts it for the edge to an
 * External node, named as ConnectionGraphWriter names it ({@code ip:port} for a server, {@code ip} for a
 * client): no agent watches that end. Each end's process, the first time it reports on its key, goes there
 * too; an end that comes after the other's record went to the External node moves it to the real edge
 * there, while its window can still be revised ({@link ExternalEnds}), and is counted
 * ({@link #PAST_LATENESS}) when it comes later than that. Both ends are kept while the connection
 * reports (state TTL {@code idleTimeoutMs} of processing time, refreshed by every record).
 *
 * <p>Virtual IPs are resolved before, by {@code TransactionVirtualIpResolver} (the connection path's
 * rules and broadcast mappings): a client that dialled a Service VIP reports the VIP as its remote
 * endpoint, the backend the client's real endpoint; the resolver rewrites the client's records to
 * the backend, so both ends share a key here and count for the edge client process -> backend
 * process, the edge the connection graph has. A client record left unresolved (several backends
 * and none reported this client endpoint by its window's end, SNAT, or a client port 0 merge of a
 * multi-backend service) keeps the VIP and counts for the External VIP:port edge, as before.
 * Records with client port 0 (the agent's merge of short connections: CLIENT localPort 0, SERVER
 * remotePort 0) pair like any other: both ends' merged records share the key client-ip:0 | server.
 *
 * <p>The agents' replayed duplicates are dropped here ({@link SeenRecords}), before the edge windows.
 */
public class TransactionEdges extends KeyedProcessFunction<String, Transaction, EdgeInput> {
  private static final long serialVersionUID = 1L;
  /** Records without a peer on their key, and each end's process: for {@link MaskedPeers}. */
  public static final OutputTag<PeerNote> UNPAIRED = new OutputTag<>("unpaired-transactions") {};
  /**
   * Ends first seen on their connection after their window closed for good (its end plus the allowed
   * lateness) while the other end had reported, over every subtask of this JVM (tests read it): what
   * that other end counted for an External node meanwhile can no longer be moved and stays there.
   */
  public static final AtomicLong PAST_LATENESS = new AtomicLong();

  private final long retentionMs;
  private final long windowMs;
  private final long allowedLatenessMs;
  private transient ValueState<String> clientProcess;
  private transient ValueState<String> serverProcess;
  private transient ListState<Transaction> pending;
  private final SeenRecords seen;
  private transient Counter pastLateness;

  public TransactionEdges(long retentionMs, long windowMs, long allowedLatenessMs) {
    this.retentionMs = retentionMs;
    this.windowMs = windowMs;
    this.allowedLatenessMs = allowedLatenessMs;
    this.seen = new SeenRecords(windowMs, allowedLatenessMs);
  }

  @Override
  public void open(OpenContext openContext) {
    clientProcess = TtlStrings.state(getRuntimeContext(), "client", retentionMs);
    serverProcess = TtlStrings.state(getRuntimeContext(), "server", retentionMs);
    pending = getRuntimeContext().getListState(new ListStateDescriptor<>("pending", Transaction.STATE_TYPE));
    seen.open(getRuntimeContext(), retentionMs);
    pastLateness = getRuntimeContext().getMetricGroup().counter("transactionPeersPastLateness");
  }

  @Override
  public void processElement(Transaction t, Context ctx, Collector<EdgeInput> out) throws Exception {
    if (!seen.firstTime(t.recordId, ctx.timestamp(), ctx.timerService().currentWatermark())) {
      return;
    }
    ValueState<String> own = t.isClient() ? clientProcess : serverProcess;
    ValueState<String> peer = t.isClient() ? serverProcess : clientProcess;
    long release = PendingRelease.releaseTime(ctx.timestamp(), windowMs);
    long watermark = ctx.timerService().currentWatermark();
    if (!t.processId().equals(own.value())) {
      own.update(t.processId());
      ctx.output(UNPAIRED, PeerNote.process(t));
      if (peer.value() != null && release + allowedLatenessMs <= watermark) {
        pastLateness.inc();
        PAST_LATENESS.incrementAndGet();
      }
    }
    if (peer.value() != null) {
      out.collect(edge(t));
      return;
    }
    if (release <= watermark) {
      ctx.output(UNPAIRED, PeerNote.unpaired(t));
      return;
    }
    pending.add(t);
    ctx.timerService().registerEventTimeTimer(release);
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<EdgeInput> out) throws Exception {
    for (Transaction t : PendingRelease.due(pending, timestamp, windowMs)) {
      if ((t.isClient() ? serverProcess : clientProcess).value() != null) {
        out.collect(edge(t));
      } else {
        ctx.output(UNPAIRED, PeerNote.unpaired(t));
      }
    }
  }

  private EdgeInput edge(Transaction t) throws Exception {
    return edge(t, t.isClient() ? t.processId() : clientProcess.value(), t.isClient() ? serverProcess.value() : t.processId());
  }

  /** Record {@code t} as input of the edge between these processes (null: the External node of that end). */
  static EdgeInput edge(Transaction t, String client, String server) {
    EdgeInput e = new EdgeInput();
    e.transaction = t;
    if (client != null) {
      e.clientKind = EdgeInput.PROCESS;
      e.clientId = client;
    } else {
      e.clientKind = EdgeInput.EXTERNAL;
      e.clientId = GraphNode.externalClient(t.remoteIp).id;
    }
    if (server != null) {
      e.serverKind = EdgeInput.PROCESS;
      e.serverId = server;
    } else {
      e.serverKind = EdgeInput.EXTERNAL;
      e.serverId = GraphNode.externalServer(t.remoteIp, t.remotePort).id;
    }
    return e;
  }

  /** The key: both ends of a connection share the sorted endpoint pair. */
  public static final class ByConnection implements KeySelector<Transaction, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Transaction t) {
      return t.connectionKey();
    }
  }
}
