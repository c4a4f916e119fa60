package io.wattgraph.graph.power;

import java.util.Map;
import java.util.TreeMap;
import org.neo4j.driver.AccessMode;
import org.neo4j.driver.Driver;
import org.neo4j.driver.Record;
import org.neo4j.driver.Session;
import org.neo4j.driver.SessionConfig;
import org.springframework.stereotype.Component;

/**
 * MANUAL power budgets kept in Neo4j, one {@code (:PowerBudgetOverride {host, watts, reason, setAtNs})} node per host,
 * so that they survive a restart of the service (the stream job never touches this label). Constant Cypher, values
 * as parameters.
 */
@Component
public class ManualBudgetStore {

    static final String LABEL = "PowerBudgetOverride";

    /** A MANUAL budget set by an administrator. */
    public record Manual(double watts, String reason, long setAtNs) {
    }

    private static final String SAVE = """
            MERGE (o:PowerBudgetOverride {host: $host})
            SET o.watts = $watts, o.reason = $reason, o.setAtNs = $setAtNs
            """;
    private static final String DELETE = "MATCH (o:PowerBudgetOverride {host: $host}) DELETE o";
    private static final String ALL = "MATCH (o:PowerBudgetOverride) RETURN o.host, o.watts, o.reason, o.setAtNs";

    private static final SessionConfig WRITE = SessionConfig.builder().withDefaultAccessMode(AccessMode.WRITE).build();
    private static final SessionConfig READ = SessionConfig.builder().withDefaultAccessMode(AccessMode.READ).build();

    private final Driver driver;

    public ManualBudgetStore(Driver driver) {
        this.driver = driver;
    }

    public void save(String host, Manual m) {
        Map<String, Object> p = new java.util.HashMap<>();
        p.put("host", host);
        p.put("watts", m.watts());
        p.put("reason", m.reason());
        p.put("setAtNs", m.setAtNs());
        try (Session s = driver.session(WRITE)) {
            s.executeWriteWithoutResult(tx -> tx.run(SAVE, p).consume());
        }
    }

    public void delete(String host) {
        try (Session s = driver.session(WRITE)) {
            s.executeWriteWithoutResult(tx -> tx.run(DELETE, Map.of("host", host)).consume());
        }
    }

    /** Every stored MANUAL budget by host; a node with no host or watts is skipped. */
    public Map<String, Manual> all() {
        Map<String, Manual> out = new TreeMap<>();
        try (Session s = driver.session(READ)) {
            for (Record r : s.executeRead(tx -> tx.run(ALL).list())) {
                if (r.get(0).isNull() || r.get(1).isNull()) {
                    continue;
                }
                out.put(r.get(0).asString(), new Manual(r.get(1).asDouble(),
                        r.get(2).isNull() ? null : r.get(2).asString(), r.get(3).isNull() ? 0L : r.get(3).asLong()));
            }
        }
        return out;
    }
}
