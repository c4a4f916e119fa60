package io.wattgraph.system;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The discard counters docs/architecture.md lists (its table "Discards"), read from the running
 * parts: each agent's Prometheus samples (summed over labels) and the job's operator metrics
 * through the Flink REST API (summed over subtasks; a restarted job counts from zero again).
 */
final class LossCounters {
  static final Path ARCHITECTURE = Path.of(System.getProperty("wattgraph.architectureDoc", "../docs/architecture.md"));
  private static final Pattern ROW = Pattern.compile("^\\| ([a-z]+)(?:, [a-z]+)? \\| `([a-zA-Z_]+)` \\|");

  private LossCounters() {}

  /** The table's series of {@code component} ("agent", "job", "service"). */
  static List<String> series(String component) throws IOException {
    return Files.readAllLines(ARCHITECTURE).stream().map(ROW::matcher).filter(Matcher::find)
        .filter(m -> m.group(1).equals(component)).map(m -> m.group(2)).distinct().toList();
  }

  /** An agent's discard counters from its samples; a series it does not export is left out. */
  static Map<String, Double> agent(Map<String, Double> samples) throws IOException {
    Map<String, Double> out = new TreeMap<>();
    for (String name : series("agent")) {
      samples.forEach((k, v) -> {
        if (k.equals(name) || k.startsWith(name + "{")) {
          out.merge(name, v, Double::sum);
        }
      });
    }
    return out;
  }

  /** The job's discard counters now (since its last start). */
  static Map<String, Long> job(ClusterJob job) throws IOException {
    return job.operatorCounters(series("job"));
  }
}
