package io.wattgraph.stream.sink.neo4j;

import java.util.ArrayList;
import java.util.List;
import java.util.function.ToIntFunction;
import java.util.function.ToLongFunction;
import org.neo4j.driver.Driver;

/**
 * What the writers of window results share ({@link NodeMetricsGraphWriter}, {@link CgroupGraphWriter},
 * {@link EdgeMetricsGraphWriter}): their driver, the name of their rows, the rule that a row replaces a
 * buffered one of the same key unless it is of an older window or revision, and the connection graph's
 * constraints (plus any of their own) before the first write.
 */
abstract class WindowGraphWriter<R> implements Neo4jBatchTarget<R> {

  protected final Driver driver;
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
