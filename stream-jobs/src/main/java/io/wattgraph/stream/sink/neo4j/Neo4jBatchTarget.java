package io.wattgraph.stream.sink.neo4j;

import java.util.Collection;
import java.util.List;
import org.apache.flink.metrics.MetricGroup;

/**
 * What {@link Neo4jSinkWriter} writes to: one kind of row (edges, window metrics) and how a batch
 * of them goes into the graph in one transaction.
 */
public interface Neo4jBatchTarget<R> extends AutoCloseable {

  /** Rows with the same key replace each other in a batch: only the latest matters. */
  String key(R row);

  /** Names the rows in logs, e.g. "edge rows". */
  String rowKind();

  /** Whether the row has anywhere to go in the graph at all. */
  default boolean accepts(R row) {
    return true;
  }

  /** Whether {@code incoming} replaces the buffered row with the same key. */
  default boolean supersedes(R incoming, R buffered) {
    return true;
  }

  /** Registers the target's own metrics on its sink's group, once, before the first write. */
  default void registerMetrics(MetricGroup group) {}

  /** Idempotent schema preparation (constraints), run before the first write. */
  void createConstraints();

  /**
   * Writes a batch in one transaction. Returns the rows that have nowhere to go yet (an edge window whose edge the
   * connection path has not written): {@link Neo4jSinkWriter} offers them again at later flushes for at most
   * {@link Neo4jSettings#waitMs}, then drops them ({@link #gaveUp}).
   */
  List<R> write(Collection<R> batch);

  /** Rows that had nowhere to go for {@link Neo4jSettings#waitMs} and were dropped (on the task's thread). */
  default void gaveUp(Collection<R> rows) {}

  @Override
  void close();
}
