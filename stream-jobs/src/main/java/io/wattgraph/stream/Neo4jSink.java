package io.wattgraph.stream;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/** Sink V2 (Flink 2 has no SinkFunction) writing edge rows to Neo4j; see {@link Neo4jSinkWriter}. */
public class Neo4jSink implements Sink<EdgeRow> {
  private static final long serialVersionUID = 1L;

  private final Neo4jSettings settings;

  public Neo4jSink(Neo4jSettings settings) {
    this.settings = settings;
  }

  @Override
  public SinkWriter<EdgeRow> createWriter(WriterInitContext context) {
    return new Neo4jSinkWriter(settings, new GraphWriter(settings), context.getProcessingTimeService(),
        context.metricGroup().getNumRecordsSendCounter());
  }
}
