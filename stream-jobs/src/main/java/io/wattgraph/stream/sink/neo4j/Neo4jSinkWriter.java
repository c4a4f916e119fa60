package io.wattgraph.stream.sink.neo4j;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.metrics.Counter;
import org.neo4j.driver.exceptions.RetryableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Buffers rows (edge totals, window metrics) and writes them in batches on a thread of its own,
 * one batch at a time, in order, for {@link Neo4jSinkOperator}.
 *
 * <p>Exactly once ({@link Neo4jSettings#writesAfterCheckpoints}): a row is written only once the checkpoint after it
 * completed. Rows since the last checkpoint barrier are open; the barrier seals them under its id;
 * the checkpoint's completion releases them to be written. A job restored from checkpoint N replays
 * what came after it, and that replay need not produce the same rows: a lone connection end whose
 * pairing horizon (processing time) passed before the failure becomes an External edge, while in the
 * replay its late peer may come first. A row written before N completed would stay in the graph
 * although no state knows it; a row held back is replaced by the replay's own. Without checkpoints
 * (a bounded run) rows go as they come.
 *
 * <p>A batch goes when the ready rows reach the batch size, every flush interval, at each checkpoint
 * and when a checkpoint completes. A checkpoint does not wait for Neo4j: the rows not yet written
 * (sealed, ready, or with the writing thread) are the writer's state ({@link #snapshotState}),
 * written by the writer restored from it (they are all before that checkpoint, which completed). So
 * a Neo4j outage stalls neither checkpoints nor the job's Kafka outputs, whose transactions commit
 * with them. Only the end of input waits until everything is written.
 *
 * <p>Rows carry absolute values, so only the latest row per key matters. While a batch is being
 * written the task keeps consuming and the buffers keep collapsing rows per key: the slower Neo4j
 * is, the fewer rows per input record it is sent, instead of the task stalling on every batch. The
 * ready rows are bounded ({@link #MAX_BUFFERED_BATCHES} batches of distinct keys); past that the task
 * waits (backpressure to Kafka). Open and sealed rows hold at most one row per key and checkpoint
 * ({@link #MAX_SEALED} checkpoints, older ones merged into the next). A write that keeps failing for
 * transient reasons is retried with backoff forever, so a Neo4j outage keeps rows instead of
 * dropping them; past the bound the task waits (and checkpoints with it, until the checkpoint
 * timeout restarts the job from the last one, which holds the rows).
 *
 * <p>A row the target has nowhere to put yet ({@link Neo4jBatchTarget#write} returns it: an edge window
 * before its edge) waits and is offered again at every later flush, for at most {@link Neo4jSettings#waitMs}
 * of processing time since it first came back, then is dropped and {@link Neo4jBatchTarget#gaveUp counted}.
 * Waiting rows are part of the state, so they survive a restore (their wait starts again there).
 *
 * <p>The buffers and the bookkeeping belong to the task's mailbox thread (timers and completions
 * arrive there as mails); the writing thread only ever sees a batch it was handed.
 */
public class Neo4jSinkWriter<R> {
  private static final Logger LOG = LoggerFactory.getLogger(Neo4jSinkWriter.class);
  private static final long MAX_BACKOFF_MS = 5_000;
  /** Distinct keys buffered while a batch is written, in batches, before the task waits. */
  static final int MAX_BUFFERED_BATCHES = 4;
  /** Checkpoints whose rows wait for their completion before the oldest is merged into the next. */
  static final int MAX_SEALED = 3;
  /** Retries after Neo4j was unavailable, over every writer of this JVM (tests watch it). */
  public static final java.util.concurrent.atomic.AtomicLong UNAVAILABLE_RETRIES = new java.util.concurrent.atomic.AtomicLong();

  private final Neo4jSettings settings;
  private final Neo4jBatchTarget<R> graph;
  private final ProcessingTimeService timers;
  private final MailboxExecutor mailbox;
  private final Counter rowsWritten;
  private final ExecutorService io;
  /** Rows since the last checkpoint barrier: a failure replays them, so they are nobody's state. */
  private Map<String, R> open = new LinkedHashMap<>();
  /** Rows before a checkpoint barrier, by its id, released when that checkpoint (or a later one) completes. */
  private final TreeMap<Long, Map<String, R>> sealed = new TreeMap<>();
  /** Rows ready to be written. */
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

  /** Takes a row: open until the next checkpoint, or ready at once without checkpoints. */
  public void write(R row) throws InterruptedException {
    if (settings.writesAfterCheckpoints) {
      put(open, row);
      return;
    }
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
  public void flush(boolean endOfInput) throws InterruptedException {
    if (endOfInput) {
      // Nothing more comes and the job is done with its input: what it produced is final.
      release(Long.MAX_VALUE);
      release(open);
      open = new LinkedHashMap<>();
    }
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

  /**
   * At checkpoint {@code checkpointId}'s barrier: seals the open rows under it, and returns the rows
   * not yet written, oldest first: those with the writing thread, the waiting ones, the ready ones,
   * the sealed ones.
   */
  public List<R> snapshotState(long checkpointId) {
    if (!open.isEmpty()) {
      sealed.put(checkpointId, open);
      open = new LinkedHashMap<>();
      while (sealed.size() > MAX_SEALED) {
        // Checkpoints keep failing (no completion releases them): the oldest rows wait for the next one too.
        Map<String, R> oldest = sealed.pollFirstEntry().getValue();
        Map.Entry<Long, Map<String, R>> next = sealed.firstEntry();
        next.getValue().values().forEach(r -> put(oldest, r));
        sealed.put(next.getKey(), oldest);
      }
    }
    List<R> rows = new ArrayList<>(handedOff.size() + waiting.size() + buffer.size());
    rows.addAll(handedOff);
    rows.addAll(waiting.values());
    rows.addAll(buffer.values());
    sealed.values().forEach(m -> rows.addAll(m.values()));
    return rows;
  }

  /** Checkpoint {@code checkpointId} completed: the rows sealed by it and before it are written. */
  public void checkpointComplete(long checkpointId) {
    release(checkpointId);
    if (!writing && !buffer.isEmpty()) {
      handOff();
    }
  }

  private void release(long upToCheckpoint) {
    Map<Long, Map<String, R>> done = sealed.headMap(upToCheckpoint, true);
    done.values().forEach(this::release);
    done.clear();
  }

  private void release(Map<String, R> rows) {
    rows.values().forEach(r -> put(buffer, r));
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

  public void close() throws InterruptedException {
    closed = true;
    io.shutdownNow();
    if (!io.awaitTermination(30, TimeUnit.SECONDS)) {
      LOG.warn("Neo4j writer thread for {} did not stop within 30 s", graph.rowKind());
    }
    graph.close();
  }
}
