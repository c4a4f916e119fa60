package io.wattgraph.graph;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.harness.Neo4j;
import io.wattgraph.localstack.Neo4jServer;
import org.neo4j.graphdb.config.Setting;
import org.neo4j.harness.Neo4jBuilder;
import org.neo4j.harness.Neo4jBuilders;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;

/**
 * One in-process Neo4j (harness) for the whole test JVM, seeded once with {@link GraphFixture}:
 * a cold Neo4j start costs seconds, so test classes share it instead of starting their own.
 */
final class TestNeo4j {

    private static Neo4j neo4j;

    private TestNeo4j() {
    }

    static synchronized String boltUri() {
        if (neo4j == null) {
            neo4j = start();
            Runtime.getRuntime().addShutdownHook(new Thread(neo4j::close, "neo4j-harness-shutdown"));
        }
        return neo4j.boltURI().toString();
    }

    /**
     * Deletes the budget history other test classes' loops left in the shared Neo4j, for a class that asserts
     * what the page draws of it (classes run one after the other in one JVM).
     */
    static void deleteBudgetHistory() {
        try (Driver d = GraphDatabase.driver(boltUri(), AuthTokens.none());
             Session s = d.session()) {
            s.run("MATCH (h:PowerBudgetHistory) DELETE h").consume();
        }
    }

    /** A localhost port nothing listens on, to point a context at an unreachable Neo4j. */
    static int closedPort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    @SuppressWarnings("unchecked")
    private static <T> void set(Neo4jBuilder builder, Setting<T> setting, Object value) {
        builder.withConfig(setting, (T) value);
    }

    private static Neo4j start() {
        return builder("neo4j-harness").withFixture(GraphFixture.CYPHER).build();
    }

    /**
     * A Neo4j of its own, with the stream job's schema and no data, for a test class that writes its own graph
     * (in {@code target/neo4j-NAME}); the caller closes it.
     */
    static Neo4j startEmpty(String name) {
        return builder("neo4j-" + name).build();
    }

    /** As {@link #startEmpty(String)}, with Bolt on 127.0.0.1:{@code boltPort}: a restart keeps the service's URI. */
    static Neo4j startEmpty(String name, int boltPort) {
        return builder("neo4j-" + name)
                .withConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", boltPort))
                .withConfig(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", boltPort))
                .build();
    }

    private static Neo4jBuilder builder(String dirName) {
        try {
            // Under target/ (not /tmp); surefire also sets java.io.tmpdir to target/tmp.
            Path dir = Files.createDirectories(Path.of("target", dirName));
            Neo4jBuilder builder = Neo4jBuilders.newInProcessBuilder(dir);
            // As the local stack's Neo4j: no file or URL import, a memory bound per transaction.
            Neo4jServer.queryHardening().forEach((setting, value) -> set(builder, setting, value));
            return builder
                    .withDisabledServer() // HTTP off; Bolt is all the service uses
                    .withConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                    // As the chart's Neo4j server: EXPLAIN's root operator carries the whole plan as text.
                    .withConfig(GraphDatabaseSettings.cypher_render_plan_descriptions, true)
                    .withConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ZERO)
                    .withConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ZERO)
                    .withFunction(PluginStandIns.class)
                    .withProcedure(PluginStandIns.class)
                    // The stream job's schema (GraphWriter.CONSTRAINTS): lookups by id plan as index seeks.
                    .withFixture("CREATE CONSTRAINT FOR (n:Host) REQUIRE n.id IS UNIQUE")
                    .withFixture("CREATE CONSTRAINT FOR (n:Process) REQUIRE n.id IS UNIQUE")
                    .withFixture("CREATE CONSTRAINT FOR (n:Container) REQUIRE n.id IS UNIQUE")
                    .withFixture("CREATE CONSTRAINT FOR (n:External) REQUIRE n.id IS UNIQUE");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
