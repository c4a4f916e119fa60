package io.wattgraph.stream.vip;

import io.wattgraph.stream.Role;
import io.wattgraph.stream.ServiceMappingUpdate;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.source.Endpoints;
import io.wattgraph.stream.transaction.PendingRelease;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.apache.flink.api.common.state.ReadOnlyBroadcastState;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.util.Collector;

/**
 * Translates virtual service addresses in TransactionStats records (the rules are
 * {@link AbstractVirtualIpResolver}'s), before {@code TransactionEdges} pairs the two ends, so that
 * a client's transactions through a Service VIP count for the edge client process -> backend
 * process, as the connection graph has it.
 *
 * <p>The transaction path runs in event time, so the horizon is the one {@code TransactionEdges}
 * waits for a connection's other end: a client record waits until the watermark reaches the last
 * millisecond of its window ({@link PendingRelease}), by when the backend's SERVER record of the
 * same window has arrived unless it is late for the window itself. It is released only from that
 * event-time timer, stamped with that millisecond (still in its window, ahead of the watermark):
 * released when the backend shows, it would carry the backend record's timestamp, possibly of
 * another window. A backend that shows meanwhile fixes the held records' backend at once. A record
 * whose window has already passed goes on at once (translated only if its backend is known).
 *
 * <p>Unlike connection events, transaction records are per-interval counts, each counted once
 * wherever it goes: a socket left untranslated for one window is resolved again in the next (its
 * backend's record of the previous window may simply have fallen into the next interval).
 */
public class TransactionVirtualIpResolver extends AbstractVirtualIpResolver<Transaction> {
  private static final long serialVersionUID = 1L;

  /** Mapping updates applied, over every subtask of this JVM (in-process tests wait on it). */
  public static final AtomicLong UPDATES_APPLIED = new AtomicLong();

  private final long windowMs;

  /**
   * @param retentionMs how long a backend's report and a client endpoint's backend are remembered
   *     (processing time) after the key's last record
   */
  public TransactionVirtualIpResolver(long retentionMs, long windowMs) {
    super(Transaction.STATE_TYPE, retentionMs, false);
    this.windowMs = windowMs;
  }

  @Override
  protected Role role(Transaction t) {
    return t.isClient() ? Role.CLIENT : "SERVER".equals(t.role) ? Role.SERVER : Role.UNKNOWN;
  }

  @Override
  protected String localIp(Transaction t) {
    return t.localIp;
  }

  @Override
  protected int localPort(Transaction t) {
    return t.localPort;
  }

  @Override
  protected String remoteIp(Transaction t) {
    return t.remoteIp;
  }

  @Override
  protected int remotePort(Transaction t) {
    return t.remotePort;
  }

  @Override
  protected boolean closed(Transaction t) {
    return t.closed;
  }

  @Override
  protected void setRemote(Transaction t, String ip, int port) {
    t.remoteIp = ip;
    t.remotePort = port;
  }

  @Override
  protected boolean hold(Transaction t, ReadOnlyContext ctx) {
    long release = PendingRelease.releaseTime(ctx.timestamp(), windowMs);
    if (release <= ctx.timerService().currentWatermark()) {
      return false; // its window is complete: waiting would only make it later
    }
    ctx.timerService().registerEventTimeTimer(release);
    return true;
  }

  @Override
  protected void backendSeen(ReadOnlyBroadcastState<String, ServiceMappingUpdate> services,
      Collector<Transaction> out) throws Exception {
    resolveHeld(services); // released from their own timers, in their own windows
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<Transaction> out) throws Exception {
    if (ctx.timeDomain() == TimeDomain.EVENT_TIME) {
      Predicate<Transaction> due = t -> PendingRelease.releaseTime(t.eventTimeMs(), windowMs) <= timestamp;
      releasePending(ctx.getBroadcastState(SERVICES), out, due, due);
    } else {
      expire(timestamp, ctx, false);
    }
  }

  @Override
  protected void applied(ServiceMappingUpdate u) {
    UPDATES_APPLIED.incrementAndGet();
  }

  /** The key, as the connection path's: the endpoint both ends of a VIP connection report. */
  public static final class ByClientEndpoint implements KeySelector<Transaction, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Transaction t) {
      return t.isClient() ? Endpoints.of(t.localIp, t.localPort) : Endpoints.of(t.remoteIp, t.remotePort);
    }
  }
}
