package io.wattgraph.stream.sink.neo4j;

import java.io.Serializable;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * Sink V2 (Flink 2 has no SinkFunction) writing rows to Neo4j through a {@link Neo4jBatchTarget}
 * built on each task; see {@link Neo4jSinkWriter}.
 */
public class Neo4jSink<R> implements Sink<R> {
  private static final long serialVersionUID = 1L;

  /** Builds the target on the task manager (drivers are not serializable). */
  public interface TargetFactory<R> extends Serializable {
    Neo4jBatchTarget<R> create(Neo4jSettings settings);
  }

  private final Neo4jSettings settings;
  private final TargetFactory<R> target;

  public Neo4jSink(Neo4jSettings settings, TargetFactory<R> target) {
    this.settings = settings;
    this.target = target;
  }

  @Override
  public SinkWriter<R> createWriter(WriterInitContext context) {
    return new Neo4jSinkWriter<>(settings, target.create(settings), context.getProcessingTimeService(),
        context.getMailboxExecutor(), context.metricGroup().getNumRecordsSendCounter());
  }
}
