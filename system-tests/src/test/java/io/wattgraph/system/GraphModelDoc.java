package io.wattgraph.system;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The example Cypher queries of docs/graph-model.md, so tests can run them. */
final class GraphModelDoc {
  private GraphModelDoc() {}

  static List<String> exampleQueries() throws IOException {
    String doc = Files.readString(Path.of("..", "docs", "graph-model.md"));
    Matcher m = Pattern.compile("```cypher\\n(.*?)```", Pattern.DOTALL).matcher(doc);
    List<String> queries = new ArrayList<>();
    while (m.find()) {
      queries.add(m.group(1).strip());
    }
    return queries;
  }
}
