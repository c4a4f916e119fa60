package io.wattgraph.stream.sink.neo4j;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import java.util.function.ToLongFunction;

/**
 * The Cypher and batching shared by the writers that put window results onto nodes (the entity
 * windows' {@link NodeMetricsGraphWriter}, the container windows' {@link CgroupGraphWriter}): the
 * {@code (windowEndNs, revision)} guard and the bounded history lists. Each writer has its own guard
 * and history properties: their windows are revised independently.
 */
final class NodeWindows {
  private NodeWindows() {}

  /**
   * The row {@code r} (with {@code r.windowEndNs}, {@code r.revision}) is not older than what node
   * {@code n} holds in {@code endProperty}, {@code revisionProperty}.
   */
  static String newer(String endProperty, String revisionProperty) {
    return """
        (n.%1$s IS NULL OR n.%1$s < r.windowEndNs
         OR (n.%1$s = r.windowEndNs AND coalesce(n.%2$s, -1) <= r.revision))
        """.formatted(endProperty, revisionProperty);
  }

  /**
   * The bounded history: parallel lists sorted by window end ({@code endList}, {@code revisionList},
   * and each of {@code valueLists}, whose new entry is the row's parameter of the same name), one
   * entry per window (its latest revision), the newest {@code $historyWindows} kept. Runs before the
   * guard: a late revision of an older window still corrects its entry. An entry of a higher
   * revision is never replaced; the new entry is appended to the old lists (index size(he)) and
   * {@code ord} lists the indices to keep, in order. Unknown values are NaN (list properties cannot
   * hold nulls).
   */
  static String history(String endList, String revisionList, String... valueLists) {
    StringBuilder olds = new StringBuilder();
    StringBuilder names = new StringBuilder();
    StringBuilder sets = new StringBuilder();
    for (int i = 0; i < valueLists.length; i++) {
      String v = valueLists[i];
      olds.append(", coalesce(n.").append(v).append(", []) AS h").append(i);
      names.append(", h").append(i);
      sets.append(",\n      n.").append(v).append(" = [i IN ord | (h").append(i).append(" + [r.").append(v)
          .append("])[i]]");
    }
    String vs = names.toString();
    return """
        WITH n, r, coalesce(n.%1$s, []) AS he, coalesce(n.%2$s, []) AS hr%3$s
        WITH n, r, he, hr%4$s, [i IN range(0, size(he) - 1) WHERE he[i] <> r.windowEndNs] AS others,
             any(i IN range(0, size(he) - 1) WHERE he[i] = r.windowEndNs AND hr[i] > r.revision) AS superseded
        WITH n, r, he, hr%4$s, superseded,
             [i IN others WHERE he[i] < r.windowEndNs] + [size(he)] + [i IN others WHERE he[i] > r.windowEndNs] AS ord
        WITH n, r, he, hr%4$s, superseded,
             CASE WHEN size(ord) > $historyWindows THEN ord[size(ord) - $historyWindows..] ELSE ord END AS ord
        FOREACH (_ IN CASE WHEN superseded THEN [] ELSE [1] END |
          SET n.%1$s = [i IN ord | (he + [r.windowEndNs])[i]],
              n.%2$s = [i IN ord | (hr + [r.revision])[i]]%5$s)
        """.formatted(endList, revisionList, olds, vs, sets);
  }

  /**
   * A batch in rounds, each holding at most one row per node, oldest windows first. Rows of one
   * UNWIND do not see each other's writes (Cypher evaluates clause by clause), so two windows of a
   * node in one statement would lose a history entry; later statements of the transaction see
   * earlier ones.
   */
  static <R> List<List<R>> rounds(Collection<R> rows, Function<R, String> node, ToLongFunction<R> windowEndNs,
      ToIntFunction<R> revision) {
    List<R> sorted = new ArrayList<>(rows);
    sorted.sort(Comparator.comparingLong(windowEndNs).thenComparingInt(revision));
    List<List<R>> rounds = new ArrayList<>();
    Map<String, Integer> seen = new HashMap<>();
    for (R r : sorted) {
      int round = seen.merge(node.apply(r), 1, Integer::sum) - 1;
      if (round == rounds.size()) {
        rounds.add(new ArrayList<>());
      }
      rounds.get(round).add(r);
    }
    return rounds;
  }

  static double orNaN(Double v) {
    return v == null ? Double.NaN : v;
  }
}
