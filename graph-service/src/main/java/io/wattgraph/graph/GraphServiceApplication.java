package io.wattgraph.graph;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.neo4j.Neo4jAutoConfiguration;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/**
 * Entry point of the graph service: a read-only REST view over the Neo4j graph written by stream-jobs.
 *
 * <p>Spring Boot's own Neo4j auto-configuration is excluded because we build the plain driver ourselves
 * from {@code wattgraph.neo4j.*} (see {@link io.wattgraph.graph.neo4j.Neo4jDriverConfiguration}), so there is
 * exactly one set of connection properties.
 */
@SpringBootApplication(exclude = Neo4jAutoConfiguration.class)
@ConfigurationPropertiesScan
public class GraphServiceApplication {

    public static void main(String[] args) {
        SpringApplication.run(GraphServiceApplication.class, args);
    }
}
