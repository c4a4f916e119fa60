package io.wattgraph.stream;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.metrics.Counter;
import org.neo4j.driver.exceptions.RetryableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Buffers rows (edge totals, window metrics) and writes them in batches: when the batch is full,
 * every flush interval, and on {@link #flush} (each checkpoint and end of input, so a completed
 * checkpoint implies the graph has everything before it).
 *
 * <p>Rows carry absolute values, so within a batch only the latest row per key matters. Everything
 * runs on the task's mailbox thread (timer callbacks included), so no locking. A write that keeps
 * failing for transient reasons blocks the task (backpressure to Kafka) instead of dropping rows.
 */
public class Neo4jSinkWriter<R> implements org.apache.flink.api.connector.sink2.SinkWriter<R> {
  private static final Logger LOG = LoggerFactory.getLogger(Neo4jSinkWriter.class);
  private static final long MAX_BACKOFF_MS = 5_000;
  /** Retries after Neo4j was unavailable, over every writer of this JVM (tests watch it). */
  static final java.util.concurrent.atomic.AtomicLong UNAVAILABLE_RETRIES = new java.util.concurrent.atomic.AtomicLong();

  private final Neo4jSettings settings;
  private final Neo4jBatchTarget<R> graph;
  private final ProcessingTimeService timers;
  private final Counter rowsWritten;
  private final Map<String, R> buffer = new LinkedHashMap<>();
  private boolean closed;

  Neo4jSinkWriter(Neo4jSettings settings, Neo4jBatchTarget<R> graph, ProcessingTimeService timers,
      Counter rowsWritten) {
    this.settings = settings;
    this.graph = graph;
    this.timers = timers;
    this.rowsWritten = rowsWritten;
    try {
      retrying("creating constraints", graph::createConstraints);
    } catch (IOException | InterruptedException e) {
      graph.close();
      throw new IllegalStateException("cannot prepare the Neo4j schema at " + settings.uri, e);
    }
    scheduleFlush();
  }

  @Override
  public void write(R row, Context context) throws IOException, InterruptedException {
    if (!graph.accepts(row)) {
      return;
    }
    String key = graph.key(row);
    R buffered = buffer.get(key);
    if (buffered != null && !graph.supersedes(row, buffered)) {
      return;
    }
    // Remove first so the row moves to the end: batches keep the order rows arrived in.
    buffer.remove(key);
    buffer.put(key, row);
    if (buffer.size() >= settings.batchSize) {
      writeBuffered();
    }
  }

  @Override
  public void flush(boolean endOfInput) throws IOException, InterruptedException {
    writeBuffered();
  }

  private void scheduleFlush() {
    timers.registerTimer(timers.getCurrentProcessingTime() + settings.flushIntervalMs, now -> {
      if (closed) {
        return;
      }
      writeBuffered();
      scheduleFlush();
    });
  }

  private void writeBuffered() throws IOException, InterruptedException {
    if (buffer.isEmpty()) {
      return;
    }
    ArrayList<R> batch = new ArrayList<>(buffer.values());
    retrying("writing " + batch.size() + " " + graph.rowKind(), () -> graph.write(batch));
    buffer.clear();
    rowsWritten.inc(batch.size());
  }

  /** Retries what the driver's own retries (30 s) gave up on, with capped backoff, forever. */
  private void retrying(String what, Runnable action) throws IOException, InterruptedException {
    long backoff = 100;
    while (true) {
      try {
        action.run();
        return;
      } catch (RuntimeException e) {
        if (!(e instanceof RetryableException)) {
          throw new IOException("Neo4j failed " + what + " (not retryable)", e);
        }
        UNAVAILABLE_RETRIES.incrementAndGet();
        LOG.warn("Neo4j unavailable while {} ({}); retrying in {} ms", what, e.toString(), backoff);
        Thread.sleep(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    graph.close();
  }
}
