package io.wattgraph.stream.sink.neo4j;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToIntFunction;
import java.util.function.ToLongFunction;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.ThreadSafeSimpleCounter;
import org.neo4j.driver.Driver;
import org.neo4j.driver.TransactionContext;

/**
 * What the writers of window results share ({@link NodeMetricsGraphWriter}, {@link CgroupGraphWriter},
 * {@link EdgeMetricsGraphWriter}): their driver, the name of their rows, the rule that a row replaces a
 * buffered one of the same key unless it is of an older window or revision, and the connection graph's
 * constraints (plus any of their own) before the first write. Those with latency totals
 * ({@link NodeWindows#latencyTotals}) count the rows whose window had left the kept shares.
 */
abstract class WindowGraphWriter<R> implements Neo4jBatchTarget<R> {

  /** The job's metric of rows {@link NodeWindows#latencyTotals} found past the kept shares. */
  public static final String PAST_SHARES_METRIC = "latencyRevisionsPastShares";
  /** Over every writer of this JVM (tests read it). */
  public static final AtomicLong PAST_SHARES = new AtomicLong();

  protected final Driver driver;
  /** Counted on the writing thread, read by the metrics reporter. */
  private final Counter pastShares = new ThreadSafeSimpleCounter();
  private final String rowKind;
  private final ToLongFunction<R> windowEndNs;
  private final ToIntFunction<R> revision;
  private final List<String> constraints;

  WindowGraphWriter(Neo4jSettings settings, String rowKind, ToLongFunction<R> windowEndNs, ToIntFunction<R> revision,
      String... ownConstraints) {
    this.driver = settings.driver();
    this.rowKind = rowKind;
    this.windowEndNs = windowEndNs;
    this.revision = revision;
    List<String> all = new ArrayList<>(ConnectionGraphWriter.CONSTRAINTS);
    all.addAll(List.of(ownConstraints));
    this.constraints = List.copyOf(all);
  }

  @Override
  public String rowKind() {
    return rowKind;
  }

  /** An older window (or an older revision of the same window) never replaces a newer one. */
  @Override
  public boolean supersedes(R incoming, R buffered) {
    return notOlder(windowEndNs.applyAsLong(incoming), revision.applyAsInt(incoming),
        windowEndNs.applyAsLong(buffered), revision.applyAsInt(buffered));
  }

  /** A later window, or the same window at the same or a later revision. */
  static boolean notOlder(long windowEndNs, int revision, long thanWindowEndNs, int thanRevision) {
    return windowEndNs > thanWindowEndNs || (windowEndNs == thanWindowEndNs && revision >= thanRevision);
  }

  /** Registers {@link #PAST_SHARES_METRIC} (the writers with latency totals). */
  protected final void registerPastShares(MetricGroup group) {
    group.counter(PAST_SHARES_METRIC, pastShares);
  }

  /** Rows this writer found past the kept latency shares. */
  public long pastShares() {
    return pastShares.getCount();
  }

  /**
   * Runs a statement ending in {@link NodeWindows#countingPast}: its rows past the kept shares, to be
   * {@link #countPast counted} once the transaction committed (the driver may run it again).
   */
  protected static long runCountingPast(TransactionContext tx, String cypher, Map<String, Object> parameters) {
    return tx.run(cypher, parameters).single().get("past").asLong();
  }

  protected final void countPast(long rows) {
    if (rows > 0) {
      pastShares.inc(rows);
      PAST_SHARES.addAndGet(rows);
    }
  }

  /** The connection graph's constraints and the writer's own (idempotent): MERGE on ids needs them. */
  @Override
  public void createConstraints() {
    ConnectionGraphWriter.createConstraints(driver, constraints);
  }

  @Override
  public void close() {
    driver.close();
  }
}
