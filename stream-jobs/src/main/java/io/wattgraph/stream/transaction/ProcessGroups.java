package io.wattgraph.stream.transaction;

import io.wattgraph.stream.SeenRecords;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.window.MetricInput;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Process -> group (container), pod and pod namespace, learnt from the ResourceSample PROCESS
 * records (their {@code groupId}, {@code podUid} and {@code podNamespace}), applied to the process's
 * TransactionStats. Keyed by the
 * graph's Process id {@code hostId/tgid/processStartTimeNs}, which both records carry.
 *
 * <p>A transaction record of a process whose group is known goes on at once, as window input of
 * its PROCESS, GROUP, POD (when the group is in a pod), NAMESPACE (when the pod's namespace is
 * known) and HOST. One of a process not known yet
 * waits until the watermark reaches the end of its window ({@link PendingRelease}): the
 * process's ResourceSamples of that window have arrived by then. If there is still none (a process that
 * never ran on a CPU in a sampling interval, or the catch-all {@code hostId/0/0}), the record counts
 * for its PROCESS and HOST only, not for any group. The mapping is kept while the process reports
 * (state TTL {@code idleTimeoutMs} of processing time, refreshed by every sample).
 *
 * <p>The first keyed step of every TransactionStats record towards the entity windows, so the
 * agents' replayed duplicates are dropped here ({@link SeenRecords}: a process sees each of its
 * records again, whichever connection it belongs to).
 */
public class ProcessGroups extends KeyedCoProcessFunction<String, MetricInput, Transaction, MetricInput> {
  private static final long serialVersionUID = 1L;

  private final long retentionMs;
  private final long windowMs;
  private transient ValueState<String> group;
  /** "" for a group outside any pod. */
  private transient ValueState<String> pod;
  /** "" or null while the namespace is unknown (no pod, or an agent without pod metadata). */
  private transient ValueState<String> namespace;
  private transient ListState<Transaction> pending;
  private final SeenRecords seen;

  public ProcessGroups(long retentionMs, long windowMs, long allowedLatenessMs) {
    this.retentionMs = retentionMs;
    this.windowMs = windowMs;
    this.seen = new SeenRecords(windowMs, allowedLatenessMs);
  }

  @Override
  public void open(OpenContext openContext) {
    group = TtlStrings.state(getRuntimeContext(), "group", retentionMs);
    namespace = TtlStrings.state(getRuntimeContext(), "namespace", retentionMs);
    pod = TtlStrings.state(getRuntimeContext(), "pod", retentionMs);
    pending = getRuntimeContext().getListState(new ListStateDescriptor<>("pending", Transaction.STATE_TYPE));
    seen.open(getRuntimeContext(), retentionMs);
  }

  /** A PROCESS window input (ResourceSample): remember its group, pod and namespace. */
  @Override
  public void processElement1(MetricInput sample, Context ctx, Collector<MetricInput> out) throws Exception {
    if (sample.groupId == null || sample.groupId.isBlank()) {
      return;
    }
    String podUid = sample.podUid == null ? "" : sample.podUid;
    boolean samePod = sample.groupId.equals(group.value()) && podUid.equals(pod.value());
    if (!samePod) {
      group.update(sample.groupId);
      pod.update(podUid);
    }
    // The agent may learn the namespace after the UID, and a later sample without it keeps it (as
    // the windows' pod metadata does); another pod or group forgets it.
    String ns = sample.pod == null || sample.pod.namespace == null || sample.pod.namespace.isBlank()
        ? "" : sample.pod.namespace;
    if (!ns.isEmpty() ? !ns.equals(namespace.value()) : !samePod) {
      namespace.update(ns);
    }
  }

  @Override
  public void processElement2(Transaction t, Context ctx, Collector<MetricInput> out) throws Exception {
    if (!seen.firstTime(t.recordId, ctx.timestamp(), ctx.timerService().currentWatermark())) {
      return;
    }
    long release = PendingRelease.releaseTime(ctx.timestamp(), windowMs);
    // Each read of a TTL state refreshes (rewrites) it: every value is read once per record.
    String g = group.value();
    if (g != null || release <= ctx.timerService().currentWatermark()) {
      // Known, or its window has fired already (waiting would not help): on at once, with its own
      // timestamp.
      emit(t, g, out);
      return;
    }
    pending.add(t);
    ctx.timerService().registerEventTimeTimer(release);
  }

  @Override
  public void onTimer(long timestamp, OnTimerContext ctx, Collector<MetricInput> out) throws Exception {
    List<Transaction> due = PendingRelease.due(pending, timestamp, windowMs);
    if (due.isEmpty()) {
      return;
    }
    String g = group.value();
    for (Transaction t : due) {
      emit(t, g, out);
    }
  }

  private void emit(Transaction t, String g, Collector<MetricInput> out) throws Exception {
    String podUid = g == null ? null : pod.value();
    String p = podUid == null || podUid.isEmpty() ? null : podUid;
    out.collect(MetricInput.ofTransaction(t, MetricInput.PROCESS, t.processId(), g, p));
    if (g != null) {
      out.collect(MetricInput.ofTransaction(t, MetricInput.GROUP, g, g, p));
      if (p != null) {
        out.collect(MetricInput.ofTransaction(t, MetricInput.POD, p, g, p));
      }
      String ns = namespace.value();
      if (ns != null && !ns.isEmpty()) {
        out.collect(MetricInput.ofTransaction(t, MetricInput.NAMESPACE, ns, g, p));
      }
    }
    out.collect(MetricInput.ofTransaction(t, MetricInput.HOST, t.hostId, g, p));
  }

  /** The key of the PROCESS samples: their entity, the graph's Process id. */
  public static final class ByEntity implements KeySelector<MetricInput, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(MetricInput in) {
      return in.entityId;
    }
  }

  /** The key of the transactions: their process's graph id. */
  public static final class ByProcess implements KeySelector<Transaction, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Transaction t) {
      return t.processId();
    }
  }
}
