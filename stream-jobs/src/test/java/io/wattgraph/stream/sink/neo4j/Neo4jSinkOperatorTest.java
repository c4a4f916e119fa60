package io.wattgraph.stream.sink.neo4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The job's Neo4j sink as {@link Neo4jSink#sinkTo} builds it, in Flink's operator harness: Flink's
 * checkpoint completion reaches the writer (a Sink V2 writer never hears of it), its state restores,
 * and a restore leaves the graph as the restored checkpoint and the replay say. Rows are "key=value"
 * strings; the graph is a map of the latest row per key (Neo4j itself: FailureRecoveryIT).
 */
class Neo4jSinkOperatorTest {
  /** The graph every target of this test writes to (the factory is serializable, so static). */
  static final Map<String, String> GRAPH = new ConcurrentHashMap<>();

  static final class MapTarget implements Neo4jBatchTarget<String> {
    @Override
    public String key(String row) {
      return row.substring(0, row.indexOf('='));
    }

    @Override
    public String rowKind() {
      return "test rows";
    }

    @Override
    public void createConstraints() {}

    @Override
    public List<String> write(Collection<String> batch) {
      batch.forEach(r -> GRAPH.put(key(r), r));
      return List.of();
    }

    @Override
    public void close() {}
  }

  static OneInputStreamOperatorTestHarness<String, Void> harness() throws Exception {
    Neo4jSink.Factory<String> factory = new Neo4jSink.Factory<>(
        new Neo4jSettings("bolt://unused", null, null, 100, 200).withWritesAfterCheckpoints(true), s -> new MapTarget(),
        Neo4jSink.rowSerializer(Types.STRING));
    return new OneInputStreamOperatorTestHarness<>(factory, StringSerializer.INSTANCE);
  }

  @BeforeEach
  void emptyGraph() {
    GRAPH.clear();
  }

  @Test
  void rowsGoOnceTheirCheckpointCompletedAndARestoreWritesWhatItHeld() throws Exception {
    OperatorSubtaskState checkpoint1;
    try (OneInputStreamOperatorTestHarness<String, Void> h = harness()) {
      h.open();
      h.processElement("a=1", 0);
      h.processElement("b=1", 0);
      h.setProcessingTime(1_000); // flush intervals pass
      assertEquals(Map.of(), GRAPH, "nothing before a checkpoint completed");
      checkpoint1 = h.snapshot(1, 1);
      h.processElement("x=1", 0); // after barrier 1
      h.notifyOfCompletedCheckpoint(1);
      await(() -> GRAPH.size() == 2);
      h.setProcessingTime(2_000);
      assertEquals(Map.of("a", "a=1", "b", "b=1"), GRAPH);
    } // fails before checkpoint 2
    GRAPH.clear(); // as if checkpoint 1's rows had not landed: the restored operator writes them
    try (OneInputStreamOperatorTestHarness<String, Void> h = harness()) {
      h.initializeState(checkpoint1);
      h.open();
      h.processElement("a=2", 0); // the replay, without x
      h.endInput();
    }
    assertEquals(Map.of("a", "a=2", "b", "b=1"), GRAPH);
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertTrue(condition.getAsBoolean(), "the writing thread did not write within 30 s: " + GRAPH);
  }
}
