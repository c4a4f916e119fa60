package io.wattgraph.stream.transaction;

import io.wattgraph.stream.HttpRouteTotals;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.TransactionTotals;
import io.wattgraph.stream.window.MetricInput;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.OutputTag;

/**
 * Combines the TransactionStats window inputs of {@link ProcessGroups} on their way out of its
 * operator ({@link ProcessGroupsOperator}), before Flink copies or serializes them: one input per
 * window key, group, pod, comm and window instead of one per record (all of a host's records in a
 * window's part between two watermarks become one HOST input), each holding the exactly merged totals,
 * histograms and HTTP routes ({@link MetricInput#transactions}). Histograms merge exactly in any
 * grouping, so every window's result is the same as without it; what it saves is the copy, the
 * shuffle, the timers and the state access of each record.
 *
 * <p>Nothing is held across a watermark: all that is buffered goes out before a watermark is
 * passed on (after the operator's timers released what they hold), so an input reaches its window
 * no later, in event time, than uncombined (it is late exactly when its records would have been).
 * Also flushed: when the output goes idle, before every checkpoint barrier and at the end (by the
 * operator: the buffer is not state, a restart replays what was not flushed), and when
 * {@code maxKeys} combinations are buffered. Group, pod and comm are part of the combination, and
 * combinations go out in the order of their first record, so what a window fills its identity from
 * (the first known) and the namespace windows' distinct pods and containers are unchanged. Records
 * that are not transactions, and side outputs, pass through.
 */
public final class TransactionInputCombiner implements Output<StreamRecord<MetricInput>> {
  private final Output<StreamRecord<MetricInput>> out;
  private final long windowMs;
  private final int maxKeys;
  /** Insertion order: combined inputs go out in the order their first record came. */
  private final Map<Combination, Combined> buffer = new LinkedHashMap<>();
  /** Transaction inputs taken in, and combined inputs sent on: their ratio is what combining saves. */
  private Counter received = new SimpleCounter();
  private Counter sent = new SimpleCounter();

  public TransactionInputCombiner(Output<StreamRecord<MetricInput>> out, long windowMs, int maxKeys) {
    if (windowMs <= 0 || maxKeys <= 0) {
      throw new IllegalArgumentException("windowMs and maxKeys must be positive: " + windowMs + ", " + maxKeys);
    }
    this.out = out;
    this.windowMs = windowMs;
    this.maxKeys = maxKeys;
  }

  /** Reports the counts as metrics of {@code group}. */
  public void registerMetrics(MetricGroup group) {
    received = group.counter("transactionWindowInputsReceived", received);
    sent = group.counter("transactionWindowInputsSent", sent);
  }

  long received() {
    return received.getCount();
  }

  long sent() {
    return sent.getCount();
  }

  /**
   * What may be combined: same window key, same identity (group, pod, comm: each combination then
   * has one, and the window's first known one is the same as from the records), same window.
   */
  private record Combination(String level, String hostId, String entityId, String groupId, String podUid,
      String comm, long windowStart) {}

  /** One combined input and the latest event time of its records. */
  private static final class Combined {
    final MetricInput input;
    long timestamp;

    Combined(MetricInput input, long timestamp) {
      this.input = input;
      this.timestamp = timestamp;
    }
  }

  @Override
  public void collect(StreamRecord<MetricInput> element) {
    MetricInput in = element.getValue();
    if (in.transaction == null || !element.hasTimestamp()) {
      out.collect(element);
      return;
    }
    received.inc();
    long ts = element.getTimestamp();
    Combination c = new Combination(in.level, in.hostId, in.entityId, in.groupId, in.podUid, in.comm,
        TimeWindow.getWindowStartWithOffset(ts, 0, windowMs));
    Combined combined = buffer.get(c);
    if (combined == null) {
      if (buffer.size() >= maxKeys) {
        flush();
      }
      combined = new Combined(empty(in), ts);
      buffer.put(c, combined);
    }
    add(combined.input, in.transaction);
    combined.timestamp = Math.max(combined.timestamp, ts);
  }

  /** A combined input with the identity of {@code first} and nothing added yet. */
  private static MetricInput empty(MetricInput first) {
    MetricInput m = new MetricInput();
    m.level = first.level;
    m.hostId = first.hostId;
    m.entityId = first.entityId;
    m.groupId = first.groupId;
    m.podUid = first.podUid;
    m.comm = first.comm;
    m.intervalEndNs = first.intervalEndNs;
    m.intervalNs = first.intervalNs;
    m.transactions = new TransactionTotals();
    // The namespace windows keep no routes (NamespaceMetrics has none).
    m.httpRoutes = first.isNamespace() ? null : new HttpRouteTotals();
    return m;
  }

  private static void add(MetricInput combined, Transaction t) {
    combined.transactions.add(t.isClient(), t.transactions, t.requestBytes, t.responseBytes, t.subBucketBits,
        t.buckets, t.counts);
    if (combined.httpRoutes != null && t.httpRoutes != null) {
      combined.httpRoutes.addAll(t.httpRoutes);
    }
    combined.intervalEndNs = Math.max(combined.intervalEndNs, t.intervalEndNs);
  }

  /** Sends every buffered input on. */
  public void flush() {
    for (Combined c : buffer.values()) {
      out.collect(new StreamRecord<>(c.input, c.timestamp));
    }
    sent.inc(buffer.size());
    buffer.clear();
  }

  @Override
  public void emitWatermark(Watermark mark) {
    flush();
    out.emitWatermark(mark);
  }

  @Override
  public void emitWatermarkStatus(WatermarkStatus status) {
    // Idle: the windows stop waiting for this input, so what it holds must be there first.
    if (status.isIdle()) {
      flush();
    }
    out.emitWatermarkStatus(status);
  }

  @Override
  public void emitWatermark(WatermarkEvent event) {
    flush();
    out.emitWatermark(event);
  }

  @Override
  public <X> void collect(OutputTag<X> tag, StreamRecord<X> record) {
    out.collect(tag, record);
  }

  @Override
  public void emitLatencyMarker(LatencyMarker marker) {
    out.emitLatencyMarker(marker);
  }

  @Override
  public void emitRecordAttributes(RecordAttributes attributes) {
    out.emitRecordAttributes(attributes);
  }

  @Override
  public void close() {
    out.close();
  }
}
