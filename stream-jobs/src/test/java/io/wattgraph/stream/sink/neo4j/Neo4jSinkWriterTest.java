package io.wattgraph.stream.sink.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.streaming.runtime.tasks.StreamTaskActionExecutor;
import org.apache.flink.streaming.runtime.tasks.TestProcessingTimeService;
import org.apache.flink.streaming.runtime.tasks.mailbox.MailboxExecutorImpl;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.exceptions.ServiceUnavailableException;

/**
 * The sink writer's buffering against Flink's own task mailbox and test timer service, with this
 * test's thread as the task's mailbox thread; the graph is a recording target whose writes the test
 * can hold (Neo4j itself is in CorrelationJobIT and FailureRecoveryIT).
 */
class Neo4jSinkWriterTest {
  record Row(String key, int value) {}

  /** Records batches; a write waits for a permit while the gate is held. */
  static final class RecordingTarget implements Neo4jBatchTarget<Row> {
    final List<List<Row>> batches = new CopyOnWriteArrayList<>();
    /** What the graph holds: the latest row written per key (rows are absolute, as the graph's are). */
    final Map<String, Row> graph = new ConcurrentHashMap<>();
    volatile CountDownLatch gate = new CountDownLatch(0);
    final AtomicInteger unavailableLeft = new AtomicInteger();
    volatile RuntimeException failWith;
    /** Keys whose rows have nowhere to go (yet): written as unplaced. */
    final Set<String> nowhere = ConcurrentHashMap.newKeySet();
    final List<Row> gaveUp = new ArrayList<>();

    @Override
    public String key(Row row) {
      return row.key;
    }

    @Override
    public String rowKind() {
      return "test rows";
    }

    @Override
    public void createConstraints() {}

    @Override
    public List<Row> write(Collection<Row> batch) {
      try {
        gate.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      if (failWith != null) {
        throw failWith;
      }
      if (unavailableLeft.getAndDecrement() > 0) {
        throw new ServiceUnavailableException("test: Neo4j is down");
      }
      batches.add(new ArrayList<>(batch));
      batch.forEach(r -> graph.put(r.key, r));
      return batch.stream().filter(r -> nowhere.contains(r.key)).toList();
    }

    @Override
    public void gaveUp(Collection<Row> rows) {
      gaveUp.addAll(rows);
    }

    void hold() {
      gate = new CountDownLatch(1);
    }

    void release() {
      gate.countDown();
    }

    @Override
    public void close() {}
  }

  final TestProcessingTimeService timers = new TestProcessingTimeService();
  final MailboxExecutorImpl mailbox =
      new MailboxExecutorImpl(new TaskMailboxImpl(Thread.currentThread()), 0, StreamTaskActionExecutor.IMMEDIATE);
  final RecordingTarget target = new RecordingTarget();
  final SimpleCounter written = new SimpleCounter();
  Neo4jSinkWriter<Row> writer;

  Neo4jSinkWriter<Row> writer(int batchSize) {
    return writer(batchSize, false);
  }

  Neo4jSinkWriter<Row> writer(int batchSize, boolean afterCheckpoints) {
    writer = new Neo4jSinkWriter<>(new Neo4jSettings("bolt://unused", null, null, batchSize, 200)
        .withWritesAfterCheckpoints(afterCheckpoints), target, timers, mailbox, written, List.of());
    return writer;
  }

  @AfterEach
  void tearDown() throws Exception {
    target.release();
    if (writer != null) {
      writer.close();
    }
  }

  @Test
  void flushWritesTheLatestRowPerKeyInArrivalOrder() throws Exception {
    Neo4jSinkWriter<Row> w = writer(100);
    w.write(new Row("a", 1));
    w.write(new Row("b", 1));
    w.write(new Row("a", 2));
    assertEquals(List.of(), target.batches, "below the batch size nothing goes before a flush or the timer");
    w.flush(true);
    assertEquals(List.of(List.of(new Row("b", 1), new Row("a", 2))), target.batches);
    assertEquals(2, written.getCount());
  }

  @Test
  void rowsKeepCollapsingWhileABatchIsBeingWritten() throws Exception {
    Neo4jSinkWriter<Row> w = writer(2);
    target.hold();
    w.write(new Row("a", 1));
    w.write(new Row("b", 1)); // batch full: handed to the writing thread, which waits
    for (int v = 2; v <= 1000; v++) {
      w.write(new Row("a", v));
      w.write(new Row("b", v));
    }
    target.release();
    w.flush(true);
    assertEquals(List.of(List.of(new Row("a", 1), new Row("b", 1)), List.of(new Row("a", 1000), new Row("b", 1000))),
        target.batches, "2,000 updates of two keys during one slow write became one more batch of two rows");
  }

  @Test
  void aFullBufferWaitsForTheWriteInFlight() throws Exception {
    Neo4jSinkWriter<Row> w = writer(1);
    target.hold();
    w.write(new Row("k0", 0)); // in flight, held
    for (int i = 1; i < Neo4jSinkWriter.MAX_BUFFERED_BATCHES; i++) {
      w.write(new Row("k" + i, i)); // buffered while k0 is written
    }
    AtomicBoolean released = new AtomicBoolean();
    Thread releaser = new Thread(() -> {
      try {
        Thread.sleep(300);
      } catch (InterruptedException e) {
        return;
      }
      released.set(true);
      target.release();
    });
    releaser.start();
    w.write(new Row("k-last", 9)); // the buffer is full: must wait for k0's write
    assertTrue(released.get(), "write returned while the buffer was full and the batch in flight was held");
    releaser.join();
    w.flush(true);
    List<String> keys = target.batches.stream().flatMap(List::stream).map(Row::key).toList();
    assertEquals(List.of("k0", "k1", "k2", "k3", "k-last"), keys, "every row once, in order");
  }

  /**
   * A checkpoint does not wait for Neo4j: with a write held, the checkpoint's flush returns, and the
   * rows not yet written (the one being written, those buffered since) are the writer's state; a
   * writer restored from it writes them, the newer of two rows of a key winning.
   */
  @Test
  void aCheckpointTakesWhatIsNotWrittenInsteadOfWaiting() throws Exception {
    Neo4jSinkWriter<Row> w = writer(1);
    target.hold();
    w.write(new Row("a", 1)); // handed off, held
    w.write(new Row("b", 1));
    w.write(new Row("a", 2));
    w.flush(false);
    List<Row> state = w.snapshotState(1);
    assertEquals(List.of(new Row("a", 1), new Row("b", 1), new Row("a", 2)), state, "in flight first, then the buffer");
    assertEquals(List.of(), target.batches, "nothing written: the checkpoint did not wait");
    // That writer ends (its task fails over, say); one restored from the state takes over.
    target.release();
    w.flush(true);
    w.close();
    writer = null;
    RecordingTarget after = new RecordingTarget();
    Neo4jSinkWriter<Row> restored = new Neo4jSinkWriter<>(new Neo4jSettings("bolt://unused", null, null, 100, 200),
        after, timers, mailbox, written, state);
    writer = restored;
    restored.flush(true);
    assertEquals(List.of(List.of(new Row("b", 1), new Row("a", 2))), after.batches);
  }

  @Test
  void theTimerSendsAPartialBatch() throws Exception {
    Neo4jSinkWriter<Row> w = writer(100);
    w.write(new Row("a", 1));
    timers.advance(200);
    mailbox.yield(); // the completion of the batch the timer handed off
    assertEquals(List.of(List.of(new Row("a", 1))), target.batches);
  }

  @Test
  void unavailableNeo4jIsRetriedUntilTheBatchLands() throws Exception {
    long retriesBefore = Neo4jSinkWriter.UNAVAILABLE_RETRIES.get();
    target.unavailableLeft.set(2);
    Neo4jSinkWriter<Row> w = writer(100);
    w.write(new Row("a", 1));
    w.flush(true);
    assertEquals(List.of(List.of(new Row("a", 1))), target.batches);
    assertEquals(2, Neo4jSinkWriter.UNAVAILABLE_RETRIES.get() - retriesBefore);
  }

  @Test
  void aFailureThatIsNotRetryableFailsTheTask() throws Exception {
    target.failWith = new IllegalArgumentException("test: bad row");
    Neo4jSinkWriter<Row> w = writer(100);
    w.write(new Row("a", 1));
    Exception e = assertThrows(Exception.class, () -> w.flush(true));
    Throwable cause = e;
    while (cause != null && !(cause.getMessage() != null && cause.getMessage().contains("not retryable"))) {
      cause = cause.getCause();
    }
    assertTrue(cause != null, "failure names what failed: " + e);
    assertEquals(0, written.getCount());
  }

  /**
   * A row the target has nowhere to put yet (an edge window before its edge) is not lost: it is in the checkpoint
   * while it waits, offered again at the next flush, and written once it can be.
   */
  @Test
  void aRowWithNowhereToGoWaitsInTheCheckpointAndIsOfferedAgain() throws Exception {
    Neo4jSinkWriter<Row> w = writer(100);
    target.nowhere.add("a");
    w.write(new Row("a", 1));
    w.write(new Row("b", 1));
    w.flush(false);
    mailbox.yield(); // the write's completion
    assertEquals(List.of(new Row("a", 1)), w.snapshotState(1), "the waiting row is the writer's state");
    assertEquals(1, written.getCount(), "only b landed");
    target.nowhere.clear(); // its edge came
    timers.advance(200);
    mailbox.yield();
    assertEquals(List.of(List.of(new Row("a", 1), new Row("b", 1)), List.of(new Row("a", 1))), target.batches);
    assertEquals(List.of(), w.snapshotState(2));
    assertEquals(2, written.getCount());
    assertEquals(List.of(), target.gaveUp);
  }

  /** A row with nowhere to go is offered again for the wait's length of processing time, then dropped and counted. */
  @Test
  void aRowWaitsAtMostTheWaitThenIsDroppedAndCounted() throws Exception {
    Neo4jSinkWriter<Row> w = writer(100);
    long wait = Neo4jSettings.DEFAULT_WAIT_MS;
    target.nowhere.add("a");
    w.write(new Row("a", 1));
    w.flush(false);
    mailbox.yield();
    timers.advance(wait - 1);
    mailbox.yield(); // offered again by the timer: still within the wait
    w.write(new Row("a", 2)); // a newer revision: replaces the waiting row at the next flush (or restore)
    assertEquals(List.of(new Row("a", 1), new Row("a", 2)), w.snapshotState(1), "waiting, then buffered");
    assertEquals(List.of(), target.gaveUp);
    timers.advance(wait);
    mailbox.yield();
    assertEquals(List.of(new Row("a", 2)), target.gaveUp, "dropped and counted once the wait passed");
    assertEquals(List.of(), w.snapshotState(2));
    w.flush(true); // nothing left to wait for
    assertEquals(3, target.batches.size());
    assertEquals(0, written.getCount());
  }

  /**
   * What the soak saw (an External edge that no state held): rows after checkpoint 1 reach the graph,
   * the job fails and is restored from 1, and its replay does not produce them again (a lone end's
   * pairing horizon, processing time, passed before the failure; in the replay its late peer came
   * first). With rows held until their checkpoint completes the graph is what the restored state
   * says; the writer of before (rows as they come) leaves x behind.
   */
  @Test
  void aRestoredJobLeavesNoRowInTheGraphThatItsCheckpointDoesNotHold() throws Exception {
    assertEquals(Map.of("a", new Row("a", 2)), graphAfterAFailureAndARestore(true));
    assertEquals(Map.of("a", new Row("a", 2), "x", new Row("x", 1)), graphAfterAFailureAndARestore(false),
        "rows written as they come: x stays although no state holds it");
  }

  private Map<String, Row> graphAfterAFailureAndARestore(boolean afterCheckpoints) throws Exception {
    RecordingTarget graph = new RecordingTarget();
    Neo4jSettings settings =
        new Neo4jSettings("bolt://unused", null, null, 100, 200).withWritesAfterCheckpoints(afterCheckpoints);
    Neo4jSinkWriter<Row> before = new Neo4jSinkWriter<>(settings, graph, timers, mailbox, written, List.of());
    before.write(new Row("a", 1));
    before.flush(false);
    List<Row> checkpoint1 = before.snapshotState(1);
    before.write(new Row("x", 1)); // after barrier 1
    before.checkpointComplete(1);
    mailbox.yield(); // the completion of the write that checkpoint's completion started
    timers.advance(200); // the flush interval
    if (!afterCheckpoints) {
      mailbox.yield(); // rows as they come: the timer started x's write
    }
    before.close(); // the task fails before checkpoint 2
    Neo4jSinkWriter<Row> restored = new Neo4jSinkWriter<>(settings, graph, timers, mailbox, written, checkpoint1);
    try {
      restored.write(new Row("a", 2)); // the replay: no x this time
      restored.flush(false);
      restored.snapshotState(2);
      restored.checkpointComplete(2);
      restored.flush(true);
    } finally {
      restored.close();
    }
    return Map.copyOf(graph.graph);
  }

  /** Rows wait for the checkpoint after them: sealed by its barrier, written when it completes, later rows not. */
  @Test
  void rowsAreWrittenWhenTheCheckpointAfterThemCompletes() throws Exception {
    Neo4jSinkWriter<Row> w = writer(2, true);
    w.write(new Row("a", 1));
    w.write(new Row("b", 1)); // the batch size: still not written
    timers.advance(200);
    w.flush(false);
    assertEquals(List.of(new Row("a", 1), new Row("b", 1)), w.snapshotState(1), "the checkpoint holds them");
    w.write(new Row("a", 2)); // after barrier 1
    timers.advance(200);
    assertEquals(List.of(), target.batches, "nothing before checkpoint 1 completed");
    w.checkpointComplete(1);
    mailbox.yield();
    assertEquals(List.of(List.of(new Row("a", 1), new Row("b", 1))), target.batches, "checkpoint 1's rows, not a2");
    assertEquals(List.of(new Row("a", 2)), w.snapshotState(2));
    w.checkpointComplete(2);
    mailbox.yield();
    assertEquals(List.of(new Row("a", 2)), target.batches.get(1));
    assertEquals(List.of(), w.snapshotState(3));
  }

  /**
   * Checkpoints that never complete (a broker outage fails them) hold at most {@link Neo4jSinkWriter#MAX_SEALED}
   * sealed sets of rows, the older merged into the next, newest row per key winning; a later completion
   * releases them all, and no row written after that checkpoint's barrier.
   */
  @Test
  void rowsOfCheckpointsThatFailWaitForTheNextOneThatCompletes() throws Exception {
    Neo4jSinkWriter<Row> w = writer(100, true);
    for (long cp = 1; cp <= 10; cp++) {
      w.write(new Row("a", (int) cp));
      w.write(new Row("k" + cp, (int) cp));
      w.snapshotState(cp);
    }
    List<Row> state = w.snapshotState(11);
    assertEquals(13, state.size(), "three sealed sets, each with its a; k1..k10 once: " + state);
    assertEquals(new Row("a", 10), state.stream().filter(r -> r.key().equals("a")).reduce((x, y) -> y).orElseThrow(),
        "the newest last");
    w.write(new Row("late", 1)); // after barrier 11
    w.checkpointComplete(10);
    mailbox.yield();
    List<Row> written = target.batches.stream().flatMap(List::stream).toList();
    assertEquals(11, written.size());
    assertTrue(written.contains(new Row("a", 10)) && written.contains(new Row("k10", 10)), "all ten checkpoints' rows");
    assertEquals(List.of(new Row("late", 1)), w.snapshotState(12));
  }

  /** At the end of input everything goes, open rows too: no checkpoint may follow. */
  @Test
  void theEndOfInputWritesRowsNoCheckpointHasTaken() throws Exception {
    Neo4jSinkWriter<Row> w = writer(100, true);
    w.write(new Row("a", 1));
    w.snapshotState(1);
    w.write(new Row("b", 1));
    w.flush(true);
    assertEquals(List.of(List.of(new Row("a", 1), new Row("b", 1))), target.batches);
  }
}
