package io.wattgraph.stream;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/** Sink V2 writing window results onto the graph's nodes; see {@link MetricsSinkWriter}. */
public class MetricsNeo4jSink implements Sink<MetricsRow> {
  private static final long serialVersionUID = 1L;

  private final Neo4jSettings settings;

  public MetricsNeo4jSink(Neo4jSettings settings) {
    this.settings = settings;
  }

  @Override
  public SinkWriter<MetricsRow> createWriter(WriterInitContext context) {
    return new MetricsSinkWriter(settings, new MetricsGraphWriter(settings), context.getProcessingTimeService(),
        context.metricGroup().getNumRecordsSendCounter());
  }
}
