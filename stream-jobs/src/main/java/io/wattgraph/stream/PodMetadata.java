package io.wattgraph.stream;

import java.util.Map;
import java.util.TreeMap;

/**
 * A Kubernetes pod's name, namespace and kept labels as the agent reports them (ResourceSample v3),
 * as a Flink POJO. The labels are {@code key=value} strings in key order: the form of the graph's
 * {@code podLabels} property, and no Map (Kryo) in the window state. A label key cannot contain
 * {@code =}, so the first one splits key and value again.
 */
public class PodMetadata {
  public String name;
  public String namespace;
  public String[] labels = new String[0];

  public PodMetadata() {}

  /** From a record's fields; null when it has none (before v3, or the agent did not know the pod). */
  public static PodMetadata of(String name, String namespace, Map<String, String> labels) {
    boolean noLabels = labels == null || labels.isEmpty();
    if (name == null && namespace == null && noLabels) {
      return null;
    }
    PodMetadata p = new PodMetadata();
    p.name = name;
    p.namespace = namespace;
    if (!noLabels) {
      p.labels = new TreeMap<>(labels).entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
          .toArray(String[]::new);
    }
    return p;
  }

  /** The labels as a map, in key order. */
  public Map<String, String> labelMap() {
    Map<String, String> m = new TreeMap<>();
    for (String l : labels) {
      int eq = l.indexOf('=');
      m.put(l.substring(0, eq), l.substring(eq + 1));
    }
    return m;
  }
}
