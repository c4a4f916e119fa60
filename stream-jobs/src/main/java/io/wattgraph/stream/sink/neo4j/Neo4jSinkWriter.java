package io.wattgraph.stream.sink.neo4j;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.metrics.Counter;
import org.neo4j.driver.exceptions.RetryableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Buffers rows (edge totals, window metrics) and writes them in batches on a thread of its own,
 * one batch at a time, in order: a batch goes when the buffer reaches the batch size, every flush
 * interval, and at each checkpoint. A checkpoint does not wait for it: the rows not yet written
 * (buffered, or with the writing thread) are the writer's state ({@link #snapshotState}), written
 * by the writer restored from it. So a Neo4j outage stalls neither checkpoints nor the job's Kafka
 * outputs, whose transactions commit with them (a checkpoint held up by Neo4j outlived them). Only
 * the end of input waits until everything is written.
 *
 * <p>Rows carry absolute values, so only the latest row per key matters. While a batch is being
 * written the task keeps consuming and the buffer keeps collapsing rows per key: the slower Neo4j
 * is, the fewer rows per input record it is sent, instead of the task stalling on every batch. The
 * buffer is bounded ({@link #MAX_BUFFERED_BATCHES} batches of distinct keys); past that the task
 * waits (backpressure to Kafka). A write that keeps failing for transient reasons is retried with
 * backoff forever, so a Neo4j outage keeps rows instead of dropping them; past the buffer's bound
 * the task waits (and checkpoints with it, until the checkpoint timeout restarts the job from the
 * last one, which holds the rows).
 *
 * <p>A row the target has nowhere to put yet ({@link Neo4jBatchTarget#write} returns it: an edge window
 * before its edge) waits and is offered again at every later flush, for at most {@link Neo4jSettings#waitMs}
 * of processing time since it first came back, then is dropped and {@link Neo4jBatchTarget#gaveUp counted}.
 * Waiting rows are part of the state, so they survive a restore (their wait starts again there).
 *
 * <p>The buffer and the bookkeeping belong to the task's mailbox thread (timers and completions
 * arrive there as mails); the writing thread only ever sees a batch it was handed.
 */
public class Neo4jSinkWriter<R> implements StatefulSinkWriter<R, R> {
  private static final Logger LOG = LoggerFactory.getLogger(Neo4jSinkWriter.class);
  private static final long MAX_BACKOFF_MS = 5_000;
  /** Distinct keys buffered while a batch is written, in batches, before the task waits. */
  static final int MAX_BUFFERED_BATCHES = 4;
  /** Retries after Neo4j was unavailable, over every writer of this JVM (tests watch it). */
  public static final java.util.concurrent.atomic.AtomicLong UNAVAILABLE_RETRIES = new java.util.concurrent.atomic.AtomicLong();

  private final Neo4jSettings settings;
  private final Neo4jBatchTarget<R> graph;
  private final ProcessingTimeService timers;
  private final MailboxExecutor mailbox;
  private final Counter rowsWritten;
  private final ExecutorService io;
  private Map<String, R> buffer = new LinkedHashMap<>();
  /** Rows the target had nowhere to put yet, offered again with the next hand-off, and since when they wait. */
  private Map<String, R> waiting = new LinkedHashMap<>();
  private final Map<String, Long> waitingSince = new HashMap<>();
  /** The rows with the writing thread (only one hand-off at a time, so batches land in order). */
  private List<R> handedOff = List.of();
  private boolean writing;
  private boolean closed;
  /** The constraints exist (the writing thread's: made before its first batch, not at start). */
  private boolean prepared;

  Neo4jSinkWriter(Neo4jSettings settings, Neo4jBatchTarget<R> graph, ProcessingTimeService timers,
      MailboxExecutor mailbox, Counter rowsWritten) {
    this(settings, graph, timers, mailbox, rowsWritten, List.of());
  }

  /** With {@code unwritten}: the rows a checkpoint held (its writer's state), written first. Public for tests. */
  public Neo4jSinkWriter(Neo4jSettings settings, Neo4jBatchTarget<R> graph, ProcessingTimeService timers,
      MailboxExecutor mailbox, Counter rowsWritten, Collection<R> unwritten) {
    this.settings = settings;
    this.graph = graph;
    this.timers = timers;
    this.mailbox = mailbox;
    this.rowsWritten = rowsWritten;
    unwritten.forEach(r -> put(buffer, r));
    this.io = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "neo4j-writer (" + graph.rowKind() + ")");
      t.setDaemon(true);
      return t;
    });
    scheduleFlush();
  }

  @Override
  public void write(R row, Context context) throws IOException, InterruptedException {
    put(buffer, row);
    if (buffer.size() >= settings.batchSize && !writing) {
      handOff();
    }
    while (buffer.size() >= MAX_BUFFERED_BATCHES * settings.batchSize) {
      mailbox.yield(); // until the batch being written completes (which hands this one off)
    }
  }

  /** Into {@code rows} (the buffer), unless a row there for its key is newer. */
  private void put(Map<String, R> rows, R row) {
    if (!graph.accepts(row)) {
      return;
    }
    String key = graph.key(row);
    R buffered = rows.get(key);
    if (buffered != null && !graph.supersedes(row, buffered)) {
      return;
    }
    // Remove first so the row moves to the end: batches keep the order rows arrived in.
    rows.remove(key);
    rows.put(key, row);
  }

  /**
   * At a checkpoint ({@code endOfInput} false) the buffer and the waiting rows are handed off if nothing
   * is being written, without waiting: what is not written yet goes into the checkpoint
   * ({@link #snapshotState}). At the end of input it waits until everything is written, and waiting
   * rows until they are written or dropped (offered again by the timer, once per flush interval).
   */
  @Override
  public void flush(boolean endOfInput) throws IOException, InterruptedException {
    if (!writing && !(buffer.isEmpty() && waiting.isEmpty())) {
      handOff();
    }
    while (endOfInput && (writing || !buffer.isEmpty() || !waiting.isEmpty())) {
      if (!writing && !buffer.isEmpty()) {
        handOff();
      }
      mailbox.yield();
    }
  }

  /** The rows not yet written, oldest first: those with the writing thread, the waiting ones, the buffer. */
  @Override
  public List<R> snapshotState(long checkpointId) {
    List<R> rows = new ArrayList<>(handedOff.size() + waiting.size() + buffer.size());
    rows.addAll(handedOff);
    rows.addAll(waiting.values());
    rows.addAll(buffer.values());
    return rows;
  }

  private void scheduleFlush() {
    timers.registerTimer(timers.getCurrentProcessingTime() + settings.flushIntervalMs, now -> {
      if (closed) {
        return;
      }
      if (!writing && !(buffer.isEmpty() && waiting.isEmpty())) {
        handOff();
      }
      scheduleFlush();
    });
  }

  /**
   * Gives the waiting rows and the whole buffer to the writing thread (in transactions of at most the
   * batch size); a buffered row replaces a waiting one of its key unless older.
   */
  private void handOff() {
    Map<String, R> all = waiting;
    waiting = new LinkedHashMap<>();
    buffer.values().forEach(r -> put(all, r));
    buffer = new LinkedHashMap<>();
    List<R> rows = new ArrayList<>(all.values());
    writing = true;
    handedOff = rows;
    io.execute(() -> {
      Exception failure = null;
      List<R> unplaced = new ArrayList<>();
      try {
        if (!prepared) {
          retrying("creating constraints", graph::createConstraints);
          prepared = true;
        }
        for (int from = 0; from < rows.size(); from += settings.batchSize) {
          List<R> batch = rows.subList(from, Math.min(rows.size(), from + settings.batchSize));
          retrying("writing " + batch.size() + " " + graph.rowKind(), () -> unplaced.addAll(graph.write(batch)));
        }
      } catch (IOException | RuntimeException e) {
        failure = e;
      } catch (InterruptedException e) {
        return; // closing
      }
      Exception failed = failure;
      try {
        mailbox.execute(() -> written(rows.size(), unplaced, failed), "neo4j batch written");
      } catch (RejectedExecutionException e) {
        // The task is gone; nothing to report to.
      }
    });
  }

  /** On the mailbox thread, after a hand-off was written (or failed for good). */
  private void written(int rows, List<R> unplaced, Exception failure) throws IOException {
    writing = false;
    handedOff = List.of();
    if (failure != null) {
      throw failure instanceof IOException io ? io : new IOException(failure);
    }
    rowsWritten.inc(rows - unplaced.size());
    long now = timers.getCurrentProcessingTime();
    List<R> expired = new ArrayList<>();
    for (R row : unplaced) {
      String key = graph.key(row);
      if (now - waitingSince.computeIfAbsent(key, k -> now) >= settings.waitMs) {
        expired.add(row);
      } else {
        put(waiting, row);
      }
    }
    waitingSince.keySet().retainAll(waiting.keySet());
    if (!expired.isEmpty()) {
      LOG.warn("Dropped {} {} that had nowhere to go in the graph for {} ms", expired.size(), graph.rowKind(),
          settings.waitMs);
      graph.gaveUp(expired);
    }
    if (buffer.size() >= settings.batchSize) {
      handOff(); // rows piled up meanwhile: the next batch goes at once
    }
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
  public void close() throws InterruptedException {
    closed = true;
    io.shutdownNow();
    if (!io.awaitTermination(30, TimeUnit.SECONDS)) {
      LOG.warn("Neo4j writer thread for {} did not stop within 30 s", graph.rowKind());
    }
    graph.close();
  }
}
