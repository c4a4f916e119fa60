package io.wattgraph.graph;

import java.net.URI;
import java.util.Map;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;
import org.neo4j.harness.Neo4j;

/**
 * A Neo4j of one test class's own ({@link TestNeo4j#startEmpty(String)}), for a class that writes its own graph:
 * started when the class's Spring context first asks for its URI (from {@code @DynamicPropertySource}), seeded
 * with the given Cypher, closed after the class. Register it as a static {@code @RegisterExtension} field.
 */
final class ClassNeo4j implements AfterAllCallback {

    private final String name;
    private final String seed;
    private final Map<String, Object> seedParameters;
    private Neo4j neo4j;

    ClassNeo4j(String name) {
        this(name, null, Map.of());
    }

    ClassNeo4j(String name, String seed, Map<String, Object> seedParameters) {
        this.name = name;
        this.seed = seed;
        this.seedParameters = seedParameters;
    }

    synchronized URI boltUri() {
        if (neo4j == null) {
            neo4j = TestNeo4j.startEmpty(name);
            if (seed != null) {
                try (Driver driver = GraphDatabase.driver(neo4j.boltURI(), AuthTokens.none());
                     Session s = driver.session()) {
                    s.run(seed, seedParameters).consume();
                }
            }
        }
        return neo4j.boltURI();
    }

    @Override
    public synchronized void afterAll(ExtensionContext context) {
        if (neo4j != null) {
            neo4j.close();
        }
    }
}
