package io.wattgraph.stream.sink.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
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
    writer = new Neo4jSinkWriter<>(new Neo4jSettings("bolt://unused", null, null, batchSize, 200), target, timers,
        mailbox, written);
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
    w.write(new Row("a", 1), null);
    w.write(new Row("b", 1), null);
    w.write(new Row("a", 2), null);
    assertEquals(List.of(), target.batches, "below the batch size nothing goes before a flush or the timer");
    w.flush(true);
    assertEquals(List.of(List.of(new Row("b", 1), new Row("a", 2))), target.batches);
    assertEquals(2, written.getCount());
  }

  @Test
  void rowsKeepCollapsingWhileABatchIsBeingWritten() throws Exception {
    Neo4jSinkWriter<Row> w = writer(2);
    target.hold();
    w.write(new Row("a", 1), null);
    w.write(new Row("b", 1), null); // batch full: handed to the writing thread, which waits
    for (int v = 2; v <= 1000; v++) {
      w.write(new Row("a", v), null);
      w.write(new Row("b", v), null);
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
    w.write(new Row("k0", 0), null); // in flight, held
    for (int i = 1; i < Neo4jSinkWriter.MAX_BUFFERED_BATCHES; i++) {
      w.write(new Row("k" + i, i), null); // buffered while k0 is written
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
    w.write(new Row("k-last", 9), null); // the buffer is full: must wait for k0's write
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
    w.write(new Row("a", 1), null); // handed off, held
    w.write(new Row("b", 1), null);
    w.write(new Row("a", 2), null);
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
    w.write(new Row("a", 1), null);
    timers.advance(200);
    mailbox.yield(); // the completion of the batch the timer handed off
    assertEquals(List.of(List.of(new Row("a", 1))), target.batches);
  }

  @Test
  void unavailableNeo4jIsRetriedUntilTheBatchLands() throws Exception {
    long retriesBefore = Neo4jSinkWriter.UNAVAILABLE_RETRIES.get();
    target.unavailableLeft.set(2);
    Neo4jSinkWriter<Row> w = writer(100);
    w.write(new Row("a", 1), null);
    w.flush(true);
    assertEquals(List.of(List.of(new Row("a", 1))), target.batches);
    assertEquals(2, Neo4jSinkWriter.UNAVAILABLE_RETRIES.get() - retriesBefore);
  }

  @Test
  void aFailureThatIsNotRetryableFailsTheTask() throws Exception {
    target.failWith = new IllegalArgumentException("test: bad row");
    Neo4jSinkWriter<Row> w = writer(100);
    w.write(new Row("a", 1), null);
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
    w.write(new Row("a", 1), null);
    w.write(new Row("b", 1), null);
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
    w.write(new Row("a", 1), null);
    w.flush(false);
    mailbox.yield();
    timers.advance(wait - 1);
    mailbox.yield(); // offered again by the timer: still within the wait
    w.write(new Row("a", 2), null); // a newer revision: replaces the waiting row at the next flush (or restore)
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
}
