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
 * Buffers window results (only the newest per entity matters: the graph holds the latest window)
 * and writes them in batches when full, every flush interval and on each checkpoint and end of
 * input. Like {@link Neo4jSinkWriter}: blocks with capped backoff while Neo4j is unavailable
 * (backpressure, nothing dropped), never fails on a transient error.
 */
public class MetricsSinkWriter implements org.apache.flink.api.connector.sink2.SinkWriter<MetricsRow> {
  private static final Logger LOG = LoggerFactory.getLogger(MetricsSinkWriter.class);
  private static final long MAX_BACKOFF_MS = 5_000;
  static final java.util.concurrent.atomic.AtomicLong UNAVAILABLE_RETRIES = new java.util.concurrent.atomic.AtomicLong();

  private final Neo4jSettings settings;
  private final MetricsGraphWriter graph;
  private final ProcessingTimeService timers;
  private final Counter rowsWritten;
  private final Map<String, MetricsRow> buffer = new LinkedHashMap<>();
  private boolean closed;

  MetricsSinkWriter(Neo4jSettings settings, MetricsGraphWriter graph, ProcessingTimeService timers,
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
  public void write(MetricsRow row, Context context) throws IOException, InterruptedException {
    if (!MetricsGraphWriter.hasNode(row)) {
      return;
    }
    MetricsRow previous = buffer.get(row.key());
    if (previous != null && (previous.windowEndNs > row.windowEndNs
        || (previous.windowEndNs == row.windowEndNs && previous.revision > row.revision))) {
      return; // the graph's Cypher would refuse it anyway
    }
    buffer.remove(row.key());
    buffer.put(row.key(), row);
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
    ArrayList<MetricsRow> batch = new ArrayList<>(buffer.values());
    retrying("writing " + batch.size() + " metrics rows", () -> graph.write(batch));
    buffer.clear();
    rowsWritten.inc(batch.size());
  }

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
