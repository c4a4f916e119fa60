package io.wattgraph.stream.sink.neo4j;

import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.operators.util.SimpleVersionedListState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Writes a stream of rows to Neo4j through a {@link Neo4jSinkWriter}. An operator rather than a
 * Sink V2 writer because it needs {@link #notifyCheckpointComplete}, which Flink does not pass to a
 * sink writer, and a committer would write on the task's thread and give up after
 * {@code sink.committer.retries} during a Neo4j outage.
 *
 * <p>Its state keeps the name and encoding of the Sink V2 writer it replaces ({@code
 * writer_raw_states}, each row versioned by {@link Neo4jSink.RowSerializer}), so a checkpoint taken
 * by that writer restores into it.
 */
final class Neo4jSinkOperator<R> extends AbstractStreamOperator<Void> implements OneInputStreamOperator<R, Void>,
    BoundedOneInput {
  private static final long serialVersionUID = 1L;
  static final ListStateDescriptor<byte[]> UNWRITTEN =
      new ListStateDescriptor<>("writer_raw_states", BytePrimitiveArraySerializer.INSTANCE);

  private final Neo4jSettings settings;
  private final Neo4jSink.TargetFactory<R> target;
  private final SimpleVersionedSerializer<R> rows;
  private final transient MailboxExecutor mailbox;
  private transient SimpleVersionedListState<R> unwritten;
  private transient Neo4jSinkWriter<R> writer;

  Neo4jSinkOperator(StreamOperatorParameters<Void> parameters, Neo4jSettings settings, Neo4jSink.TargetFactory<R> target,
      SimpleVersionedSerializer<R> rows, MailboxExecutor mailbox) {
    super(parameters);
    this.settings = settings;
    this.target = target;
    this.rows = rows;
    this.mailbox = mailbox;
  }

  @Override
  public void initializeState(StateInitializationContext context) throws Exception {
    super.initializeState(context);
    unwritten = new SimpleVersionedListState<>(context.getOperatorStateStore().getListState(UNWRITTEN), rows);
    List<R> restored = new ArrayList<>();
    unwritten.get().forEach(restored::add);
    Neo4jBatchTarget<R> graph = target.create(settings);
    graph.registerMetrics(getMetricGroup());
    writer = new Neo4jSinkWriter<>(settings, graph, getProcessingTimeService(), mailbox,
        getMetricGroup().counter("neo4jRowsWritten"), restored);
  }

  @Override
  public void processElement(StreamRecord<R> element) throws Exception {
    writer.write(element.getValue());
  }

  @Override
  public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
    super.prepareSnapshotPreBarrier(checkpointId);
    writer.flush(false);
  }

  @Override
  public void snapshotState(StateSnapshotContext context) throws Exception {
    super.snapshotState(context);
    unwritten.update(writer.snapshotState(context.getCheckpointId()));
  }

  @Override
  public void notifyCheckpointComplete(long checkpointId) throws Exception {
    super.notifyCheckpointComplete(checkpointId);
    writer.checkpointComplete(checkpointId);
  }

  @Override
  public void endInput() throws Exception {
    writer.flush(true);
  }

  @Override
  public void close() throws Exception {
    try {
      if (writer != null) {
        writer.close();
      }
    } finally {
      super.close();
    }
  }
}
