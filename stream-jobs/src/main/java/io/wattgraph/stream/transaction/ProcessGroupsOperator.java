package io.wattgraph.stream.transaction;

import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.window.MetricInput;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.StreamTask;

/**
 * The operator of {@link ProcessGroups}: its output goes through a {@link TransactionInputCombiner},
 * so the up to five window inputs of each record are merged where they are made, not copied first
 * (Flink copies every record between chained operators). Flushed before each checkpoint barrier
 * and at the end; watermarks and idleness flush it on their way out. Metrics
 * {@code transactionWindowInputsReceived} and {@code transactionWindowInputsSent} show what it saves.
 */
public class ProcessGroupsOperator extends KeyedCoProcessOperator<String, MetricInput, Transaction, MetricInput> {
  private static final long serialVersionUID = 1L;

  private final long windowMs;
  private final int maxCombinedInputs;
  private transient TransactionInputCombiner combiner;

  public ProcessGroupsOperator(ProcessGroups groups, long windowMs, int maxCombinedInputs) {
    super(groups);
    this.windowMs = windowMs;
    this.maxCombinedInputs = maxCombinedInputs;
  }

  @Override
  protected void setup(StreamTask<?, ?> containingTask, StreamConfig config, Output<StreamRecord<MetricInput>> output) {
    combiner = new TransactionInputCombiner(output, windowMs, maxCombinedInputs);
    super.setup(containingTask, config, combiner);
  }

  @Override
  public void open() throws Exception {
    super.open();
    combiner.registerMetrics(getMetricGroup());
  }

  /** The combiner on this operator's output (tests read its counts). */
  TransactionInputCombiner combiner() {
    return combiner;
  }

  @Override
  public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
    combiner.flush();
    super.prepareSnapshotPreBarrier(checkpointId);
  }

  @Override
  public void finish() throws Exception {
    super.finish();
    combiner.flush();
  }
}
