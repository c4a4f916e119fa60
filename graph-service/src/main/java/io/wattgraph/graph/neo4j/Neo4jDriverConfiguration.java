package io.wattgraph.graph.neo4j;

import java.util.concurrent.TimeUnit;
import org.neo4j.driver.AuthToken;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Config;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Logging;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Builds the single, thread-safe Neo4j {@link Driver}. Creating it does not connect, so the service
 * starts even while Neo4j is down; health and requests then report the outage.
 */
@Configuration(proxyBeanMethods = false)
public class Neo4jDriverConfiguration {

    @Bean(destroyMethod = "close")
    public Driver neo4jDriver(Neo4jProperties properties) {
        return driver(properties, properties.uri(), Config.builder());
    }

    /** A driver with the service's credentials and timeouts, to the given URI, with extra settings in config. */
    public static Driver driver(Neo4jProperties properties, String uri, Config.ConfigBuilder config) {
        AuthToken auth = properties.hasCredentials()
                ? AuthTokens.basic(properties.username(), properties.password() == null ? "" : properties.password())
                : AuthTokens.none();
        config.withConnectionTimeout(properties.connectionTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .withMaxTransactionRetryTime(properties.maxRetryTime().toMillis(), TimeUnit.MILLISECONDS)
                // Route driver logs through SLF4J/Logback like the rest of the service.
                .withLogging(Logging.slf4j());
        return GraphDatabase.driver(uri, auth, config.build());
    }
}
