package io.wattgraph.graph.neo4j;

import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;
import org.springframework.stereotype.Component;

/**
 * Health contributor {@code neo4j}: UP when {@code RETURN 1} succeeds through the driver (one attempt, no retries). It is part of
 * the readiness group (application.properties), so a pod without Neo4j stops receiving traffic but is
 * not restarted (liveness does not include it). The bean name makes Spring Boot's own Neo4j indicator back off.
 */
@Component("neo4jHealthIndicator")
public class Neo4jHealthIndicator extends AbstractHealthIndicator {

    private final Neo4jReader reader;

    public Neo4jHealthIndicator(Neo4jReader reader) {
        super("Neo4j health check failed");
        this.reader = reader;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        List<Long> result = reader.readOnce("health", "RETURN 1 AS ok", Map.of(), r -> r.get("ok").asLong());
        builder.up().withDetail("result", result.get(0));
    }
}
