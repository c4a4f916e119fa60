package io.wattgraph.graph.neo4j;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Connection settings for Neo4j ({@code wattgraph.neo4j.*}).
 *
 * @param uri Bolt URI; the local stack runs Neo4j at bolt://127.0.0.1:7687 with auth off
 * @param username optional; when blank the driver connects without authentication
 * @param password optional, used only together with a username
 * @param connectionTimeout how long to wait for a TCP connection before reporting Neo4j unavailable
 * @param maxRetryTime how long the driver retries a failed read transaction; kept short so that a
 *     down database turns into a quick 503 instead of a request hanging for the driver default of 30 s
 */
@ConfigurationProperties("wattgraph.neo4j")
public record Neo4jProperties(
        @DefaultValue("bolt://127.0.0.1:7687") String uri,
        String username,
        String password,
        @DefaultValue("5s") Duration connectionTimeout,
        @DefaultValue("3s") Duration maxRetryTime) {

    /** Auth is used only when a username is configured: the local stack runs with auth disabled. */
    public boolean hasCredentials() {
        return username != null && !username.isBlank();
    }
}
