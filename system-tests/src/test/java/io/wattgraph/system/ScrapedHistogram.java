package io.wattgraph.system;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One classic histogram of a Prometheus text scrape: its {@code _bucket} lines (upper bound, cumulative count, in
 * order of bound), {@code _count} and {@code _sum}, of the series whose labels include the given ones.
 */
record ScrapedHistogram(List<Double> upperBounds, List<Long> cumulativeCounts, long count, double sum) {

  private static final Pattern LINE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)\\{(.*)\\} (\\S+)$");
  private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  /**
   * The histogram {@code name} (without suffix) of the one series whose labels include {@code labels}; null when
   * the scrape has none. More than one matching series is an error.
   */
  static ScrapedHistogram of(String scrape, String name, Map<String, String> labels) {
    TreeMap<Double, Long> buckets = new TreeMap<>();
    Long count = null;
    Double sum = null;
    String series = null;
    for (String line : scrape.split("\n")) {
      Matcher m = LINE.matcher(line);
      if (!m.matches() || !m.group(1).startsWith(name + "_")) {
        continue;
      }
      Map<String, String> l = labels(m.group(2));
      if (!l.entrySet().containsAll(labels.entrySet())) {
        continue;
      }
      String suffix = m.group(1).substring(name.length());
      String le = l.remove("le");
      String key = l.toString();
      if (series != null && !series.equals(key)) {
        throw new AssertionError("more than one series of " + name + " with " + labels + ": " + series + ", " + key);
      }
      series = key;
      double value = Double.parseDouble(m.group(3));
      switch (suffix) {
        case "_bucket" -> buckets.put(le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le),
            (long) value);
        case "_count" -> count = (long) value;
        case "_sum" -> sum = value;
        default -> { }
      }
    }
    if (series == null) {
      return null;
    }
    return new ScrapedHistogram(new ArrayList<>(buckets.keySet()), new ArrayList<>(buckets.values()),
        count == null ? -1 : count, sum == null ? Double.NaN : sum);
  }

  private static Map<String, String> labels(String text) {
    Map<String, String> out = new TreeMap<>();
    Matcher m = LABEL.matcher(text);
    while (m.find()) {
      out.put(m.group(1), m.group(2).replace("\\\"", "\"").replace("\\\\", "\\"));
    }
    return out;
  }
}
