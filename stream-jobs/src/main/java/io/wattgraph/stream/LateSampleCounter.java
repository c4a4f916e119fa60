package io.wattgraph.stream;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.Counter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * End of the windows' late side output: window inputs that arrived after their window's end plus
 * the allowed lateness. They are counted (metric {@code lateSamplesDropped}; POD inputs, which
 * duplicate a GROUP input, are not counted) and logged, not written anywhere.
 */
public class LateSampleCounter implements Sink<MetricInput> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(LateSampleCounter.class);
  /** Over every subtask of this JVM (tests read it). */
  static final AtomicLong DROPPED = new AtomicLong();

  @Override
  public SinkWriter<MetricInput> createWriter(WriterInitContext context) {
    Counter counter = context.metricGroup().counter("lateSamplesDropped");
    return new SinkWriter<>() {
      private long logged;

      @Override
      public void write(MetricInput in, Context ctx) {
        if (MetricInput.POD.equals(in.level)) {
          return;
        }
        counter.inc();
        DROPPED.incrementAndGet();
        // The first few, then every 1000th: a skewed host could otherwise flood the log.
        if (logged < 10 || counter.getCount() % 1000 == 0) {
          logged++;
          LOG.warn("Sample beyond the allowed lateness dropped ({} so far): {} (event time {} ms)",
              counter.getCount(), in, ctx.timestamp());
        }
      }

      @Override
      public void flush(boolean endOfInput) {}

      @Override
      public void close() {}
    };
  }
}
