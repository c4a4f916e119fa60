package io.wattgraph.stream.transaction;

import io.wattgraph.stream.Transaction;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;

/**
 * The job's two pairing steps in Flink's harness, wired as CorrelationJob wires them: {@link TransactionEdges},
 * its {@link TransactionEdges#UNPAIRED} side output into {@link MaskedPeers}, each watermark to both in order.
 */
public final class EdgePairing implements AutoCloseable {
  public final KeyedOneInputStreamOperatorTestHarness<String, Transaction, EdgeInput> edges;
  public final KeyedOneInputStreamOperatorTestHarness<String, PeerNote, EdgeInput> masked;

  public EdgePairing(long retentionMs, long windowMs) throws Exception {
    this(retentionMs, windowMs, null);
  }

  /** Restored from {@link #snapshot} (null: empty state). */
  public EdgePairing(long retentionMs, long windowMs, OperatorSubtaskState[] restored) throws Exception {
    edges = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new TransactionEdges(retentionMs, windowMs, 30_000)), new TransactionEdges.ByConnection(),
        Types.STRING);
    masked = new KeyedOneInputStreamOperatorTestHarness<>(
        new KeyedProcessOperator<>(new MaskedPeers(retentionMs, windowMs, 30_000)), new MaskedPeers.ByMaskedKey(), Types.STRING);
    if (restored != null) {
      edges.initializeState(restored[0]);
      masked.initializeState(restored[1]);
    }
    edges.open();
    masked.open();
  }

  /** Both steps' state, as a checkpoint has it. */
  public OperatorSubtaskState[] snapshot(long checkpointId) throws Exception {
    return new OperatorSubtaskState[] {edges.snapshot(checkpointId, checkpointId), masked.snapshot(checkpointId, checkpointId)};
  }

  public void element(Transaction t, long timestamp) throws Exception {
    edges.processElement(new StreamRecord<>(t, timestamp));
    forward();
  }

  public void watermark(long w) throws Exception {
    edges.processWatermark(new Watermark(w));
    forward();
    masked.processWatermark(new Watermark(w));
  }

  public void setStateTtlProcessingTime(long ms) {
    edges.setStateTtlProcessingTime(ms);
    masked.setStateTtlProcessingTime(ms);
  }

  /** What both steps emitted, the first's then the second's, and forgets it. */
  public List<StreamRecord<EdgeInput>> take() {
    List<StreamRecord<EdgeInput>> out = new ArrayList<>(TransactionJoinsTest.<EdgeInput>records(edges.getOutput()));
    out.addAll(TransactionJoinsTest.<EdgeInput>records(masked.getOutput()));
    edges.getOutput().clear();
    masked.getOutput().clear();
    return out;
  }

  public List<String> takeKeys() {
    return take().stream().map(r -> r.getValue().key()).toList();
  }

  /** The side output so far, as MaskedPeers will read it. */
  private void forward() throws Exception {
    var notes = edges.getSideOutput(TransactionEdges.UNPAIRED);
    if (notes != null) {
      StreamRecord<PeerNote> n;
      while ((n = notes.poll()) != null) {
        masked.processElement(n);
      }
    }
  }

  @Override
  public void close() throws Exception {
    edges.close();
    masked.close();
  }
}
