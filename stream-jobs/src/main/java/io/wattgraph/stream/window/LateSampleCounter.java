package io.wattgraph.stream.window;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.Counter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * End of the windows' late side output: window inputs (ResourceSamples and TransactionStats) that
 * arrived after their window's end plus the allowed lateness, e.g. an agent's spool after a Kafka
 * outage longer than the lateness. They are counted (metric {@code lateSamplesDropped}) and logged,
 * not written anywhere. Each dropped source record is counted once: {@link #windowInputs()} skips POD inputs
 * (they duplicate a GROUP input) and a TransactionStats record's GROUP/POD/NAMESPACE/HOST inputs
 * (they duplicate its PROCESS input), and counts a combined PROCESS input as the records it holds;
 * {@link #edgeInputs()} counts every edge input (one per record).
 */
public class LateSampleCounter<T> implements Sink<T> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(LateSampleCounter.class);
  /** Over every subtask of this JVM (tests read it). */
  public static final AtomicLong DROPPED = new AtomicLong();

  private final Records<T> records;

  private LateSampleCounter(Records<T> records) {
    this.records = records;
  }

  /** How many source records one dropped input counts for (serializable: it travels with the job graph). */
  interface Records<T> extends java.io.Serializable {
    long of(T in);
  }

  public static LateSampleCounter<MetricInput> windowInputs() {
    return new LateSampleCounter<>(in -> !in.isTransactions()
        ? (MetricInput.POD.equals(in.level) ? 0 : 1)
        : (MetricInput.PROCESS.equals(in.level) ? in.transactionRecords() : 0));
  }

  /** Every input counts as one record, as an edge window input does; generic, so the windows need no edge type. */
  public static <T> LateSampleCounter<T> edgeInputs() {
    return records();
  }

  /** Every input counts as one record (edge window inputs, CgroupStats). */
  public static <T> LateSampleCounter<T> records() {
    return new LateSampleCounter<>(in -> 1);
  }

  /** The source records a dropped input counts for. */
  long records(T in) {
    return records.of(in);
  }

  @Override
  public SinkWriter<T> createWriter(WriterInitContext context) {
    Counter counter = context.metricGroup().counter("lateSamplesDropped");
    return new SinkWriter<>() {
      private long logged;

      @Override
      public void write(T in, Context ctx) {
        long n = records(in);
        if (n == 0) {
          return;
        }
        long before = counter.getCount();
        counter.inc(n);
        DROPPED.addAndGet(n);
        // The first few, then one per 1000: a skewed host could otherwise flood the log.
        if (logged < 10 || before / 1000 != counter.getCount() / 1000) {
          logged++;
          LOG.warn("Input beyond the allowed lateness dropped ({} so far): {} (event time {} ms)",
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
