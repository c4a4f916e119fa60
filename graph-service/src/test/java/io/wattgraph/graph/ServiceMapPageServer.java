package io.wattgraph.graph;

import java.nio.file.Files;
import java.nio.file.Path;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/**
 * The service and its page over an in-process Neo4j, for the page benchmark (docs/benchmarks/service-map.md)
 * and for working on the page by hand; not a test. {@code fixture} serves {@link GraphFixture},
 * {@code synthetic N} the benchmark's synthetic graph of N processes ({@link GraphServiceBenchmark#synthetic}).
 * Prints {@code URL http://127.0.0.1:PORT} once it answers, then runs until killed. From graph-service/:
 * <pre>
 *   mvn -o -q -pl graph-service test-compile                      # from the repository root
 *   mvn -o -q dependency:build-classpath -Dmdep.outputFile=target/cp.txt -Dmdep.includeScope=test
 *   java -cp target/test-classes:target/classes:$(cat target/cp.txt) io.wattgraph.graph.ServiceMapPageServer synthetic 2000
 * </pre>
 */
public final class ServiceMapPageServer {

    private ServiceMapPageServer() {
    }

    public static void main(String[] args) throws Exception {
        String bolt;
        Neo4j db = null;
        if (args.length >= 1 && args[0].equals("fixture")) {
            bolt = TestNeo4j.boltUri();
        } else if (args.length >= 2 && args[0].equals("synthetic")) {
            int n = Integer.parseInt(args[1]);
            Path dir = Files.createDirectories(Path.of("target", "page-server-neo4j"));
            db = Neo4jBuilders.newInProcessBuilder(dir).withDisabledServer()
                    .withConfig(GraphDatabaseSettings.preallocate_logical_logs, false).build();
            try (Driver driver = GraphDatabase.driver(db.boltURI(), AuthTokens.none());
                 Session s = driver.session()) {
                GraphServiceBenchmark.write(s, GraphServiceBenchmark.synthetic(n, 42));
            }
            bolt = db.boltURI().toString();
        } else {
            System.err.println("usage: ServiceMapPageServer fixture | synthetic N");
            System.exit(2);
            return;
        }
        GraphServiceBenchmark.App app = new GraphServiceBenchmark.App("page", bolt, false, "5s", "2s");
        System.out.println("URL " + app.base);
        System.out.flush();
        // Stopped by a signal: the service before its Neo4j, then out (Neo4j's threads would keep the JVM up).
        Neo4j ownDb = db;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            app.context.close();
            if (ownDb != null) {
                ownDb.close();
            }
            Runtime.getRuntime().halt(0);
        }));
        Thread.currentThread().join();
    }
}
