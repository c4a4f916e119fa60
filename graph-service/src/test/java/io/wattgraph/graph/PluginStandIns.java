package io.wattgraph.graph;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;
import org.neo4j.procedure.UserFunction;

/**
 * A user-defined function and procedure registered in the test Neo4j, standing in for plugin code that reads
 * outside the graph (APOC's load and file functions are of this kind): real Neo4j extensions that read a file,
 * counting their calls so a test can show the Cypher endpoint never ran them.
 */
public class PluginStandIns {

    static final AtomicInteger CALLS = new AtomicInteger();

    public record Line(String line) {
    }

    @UserFunction("wattgraph.plugin.readFile")
    public String readFile(@Name("path") String path) throws IOException {
        CALLS.incrementAndGet();
        return Files.readString(Path.of(path));
    }

    @Procedure("wattgraph.plugin.readLines")
    public Stream<Line> readLines(@Name("path") String path) throws IOException {
        CALLS.incrementAndGet();
        return Files.readAllLines(Path.of(path)).stream().map(Line::new);
    }
}
