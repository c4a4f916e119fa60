package io.wattgraph.stream.sink.neo4j;

import io.wattgraph.schema.TransactionHistograms;
import io.wattgraph.stream.window.LatencyStats;
import java.util.ArrayList;
import java.util.Arrays;
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
 * {@code (windowEndNs, revision)} guard, the bounded history lists and the latency histograms' totals
 * (also on edges, {@link EdgeMetricsGraphWriter}). Each writer has its own guard
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
   * Running totals of latency histograms, for the exported histograms: {@code <v>.<h>OctaveTotals} (per octave
   * bucket) and {@code <v>.<h>SumNsTotal} of each histogram {@code h} are the sum over every window written of its
   * latest revision's {@code r.<h>Octaves} and {@code r.<h>SumNs}, in whatever order windows and revisions come.
   * So that a revision can replace its window's share, each share is kept in bounded lists, sorted by window end:
   * {@code latencyShareWindowEndNs}, {@code latencyShareRevision}, {@code <h>ShareOctaves} (the octave counts of
   * each window in turn, {@value TransactionHistograms#OCTAVE_BUCKETS} per window: lists cannot nest) and
   * {@code <h>ShareSumNs}, for the newest {@code $latencyShareWindows} windows that had a histogram. Runs before the
   * guard (a late revision of an older window still counts) and leaves {@code past}: the row's window is older than
   * every kept share, so its earlier share, if any, is unknown and it is not added (counted by the writer). A lower
   * revision than the kept one, and a window without histograms, change nothing; a replay replaces a share by
   * itself. Totals stay null until a window has that histogram.
   */
  static String latencyTotals(String v, String... histograms) {
    int b = TransactionHistograms.OCTAVE_BUCKETS;
    List<String> has = new ArrayList<>();
    List<String> totals = new ArrayList<>();
    List<String> shares = new ArrayList<>();
    for (String h : histograms) {
      has.add("r.%sOctaves IS NOT NULL".formatted(h));
      totals.add("""
          %1$s.%2$sOctaveTotals = CASE WHEN NOT apply OR (%1$s.%2$sOctaveTotals IS NULL AND r.%2$sOctaves IS NULL)
            THEN %1$s.%2$sOctaveTotals
            ELSE [i IN range(0, %3$d) | coalesce(%1$s.%2$sOctaveTotals[i], 0) + coalesce(r.%2$sOctaves[i], 0)
              - CASE WHEN at >= 0 THEN %1$s.%2$sShareOctaves[at * %4$d + i] ELSE 0 END] END,
          %1$s.%2$sSumNsTotal = CASE WHEN NOT apply OR (%1$s.%2$sSumNsTotal IS NULL AND r.%2$sSumNs IS NULL)
            THEN %1$s.%2$sSumNsTotal
            ELSE coalesce(%1$s.%2$sSumNsTotal, 0.0) + coalesce(r.%2$sSumNs, 0.0)
              - CASE WHEN at >= 0 THEN %1$s.%2$sShareSumNs[at] ELSE 0.0 END END""".formatted(v, h, b - 1, b));
      shares.add("""
          %1$s.%2$sShareOctaves = CASE WHEN apply THEN reduce(a = [], i IN ord | a
            + (coalesce(%1$s.%2$sShareOctaves, []) + coalesce(r.%2$sOctaves, [z IN range(1, %3$d) | 0]))[i * %3$d..(i + 1) * %3$d])
            ELSE %1$s.%2$sShareOctaves END,
          %1$s.%2$sShareSumNs = CASE WHEN apply THEN [i IN ord | (coalesce(%1$s.%2$sShareSumNs, []) + [coalesce(r.%2$sSumNs, 0.0)])[i]]
            ELSE %1$s.%2$sShareSumNs END""".formatted(v, h, b));
    }
    // The totals read the old shares: they come first in the SET.
    return """
        WITH %1$s, r, coalesce(%1$s.latencyShareWindowEndNs, []) AS se, coalesce(%1$s.latencyShareRevision, []) AS sr
        WITH %1$s, r, se, sr, [i IN range(0, size(se) - 1) WHERE se[i] = r.windowEndNs] + [-1] AS at,
             [i IN range(0, size(se) - 1) WHERE se[i] < r.windowEndNs] + [size(se)]
               + [i IN range(0, size(se) - 1) WHERE se[i] > r.windowEndNs] AS ord
        WITH %1$s, r, se, sr, at[0] AS at,
             CASE WHEN size(ord) > $latencyShareWindows THEN ord[size(ord) - $latencyShareWindows..] ELSE ord END AS ord
        WITH %1$s, r, se, sr, at, ord, (%2$s) AND (at < 0 OR sr[at] <= r.revision) AS counts
        WITH %1$s, r, se, sr, at, ord, counts AND (size(se) IN ord) AS apply, counts AND NOT (size(se) IN ord) AS past
        SET %3$s,
          %4$s,
          %1$s.latencyShareWindowEndNs = CASE WHEN apply THEN [i IN ord | (se + [r.windowEndNs])[i]]
            ELSE %1$s.latencyShareWindowEndNs END,
          %1$s.latencyShareRevision = CASE WHEN apply THEN [i IN ord | (sr + [r.revision])[i]]
            ELSE %1$s.latencyShareRevision END
        WITH %1$s, r, past
        """.formatted(v, String.join(" OR ", has), String.join(",\n", totals), String.join(",\n", shares));
  }

  /**
   * The guarded rest of a statement after {@link #latencyTotals} ({@code WITH <v>, r WHERE ...}) in a unit
   * subquery, so that the statement still returns how many rows were {@code past} the kept shares.
   */
  static String countingPast(String v, String guarded) {
    return "CALL (" + v + ", r) {\n" + guarded + "}\nRETURN count(CASE WHEN past THEN 1 END) AS past\n";
  }

  /** The latest window's histograms (under the guard, with its other figures): {@code <h>Octaves}, {@code <h>SumNs}. */
  static String latencyWindow(String v, String... histograms) {
    List<String> sets = new ArrayList<>();
    for (String h : histograms) {
      sets.add("%1$s.%2$sOctaves = r.%2$sOctaves, %1$s.%2$sSumNs = r.%2$sSumNs".formatted(v, h));
    }
    return "SET " + String.join(", ", sets) + "\n";
  }

  /** A histogram's parameters for {@link #latencyTotals} and {@link #latencyWindow}: {@code <h>Octaves} (null when empty), {@code <h>SumNs}. */
  static void putLatency(Map<String, Object> m, String h, LatencyStats stats) {
    long[] octaves = stats == null ? null : stats.octaves;
    m.put(h + "Octaves", octaves == null ? null : Arrays.stream(octaves).boxed().toList());
    m.put(h + "SumNs", stats == null ? null : stats.sumNs);
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
