package io.wattgraph.graph.neo4j;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import org.neo4j.driver.AccessMode;
import org.neo4j.driver.Driver;
import org.neo4j.driver.Record;
import org.neo4j.driver.Session;
import org.neo4j.driver.SessionConfig;
import org.neo4j.driver.TransactionContext;
import org.springframework.stereotype.Component;

/**
 * The one place that talks to Neo4j: runs parameterised Cypher in a managed read transaction and
 * times it as {@code wattgraph.neo4j.query{query=NAME,outcome=success|error}}.
 *
 * <p>Request input must only ever reach Cypher through {@code parameters}; the query text is a
 * constant chosen by the caller, which is also what keeps the {@code query} tag's cardinality bounded.
 */
@Component
public class Neo4jReader {

    public static final String TIMER_NAME = "wattgraph.neo4j.query";

    private static final SessionConfig READ = SessionConfig.builder().withDefaultAccessMode(AccessMode.READ).build();


    private final Driver driver;
    private final MeterRegistry registry;

    public Neo4jReader(Driver driver, MeterRegistry registry) {
        this.driver = driver;
        this.registry = registry;
    }

    /**
     * Runs {@code cypher} with {@code parameters} in a managed read transaction (retried by the driver
     * for up to {@code wattgraph.neo4j.max-retry-time}) and maps every record while still inside the
     * transaction (results cannot be read after it closes).
     */
    public <T> List<T> read(String queryName, String cypher, Map<String, Object> parameters,
                            Function<Record, T> mapper) {
        return timed(queryName, () -> {
            try (Session session = driver.session(READ)) {
                return session.executeRead(tx -> tx.run(cypher, parameters).list(mapper::apply));
            }
        });
    }

    /**
     * Several queries in one managed read transaction, retried as a whole like {@link #read}; {@code work} must
     * consume every result it runs. Not one snapshot: each query sees what was committed when it started. The driver's default fetch size (batches of
     * 1000, the next one pulled while this one is decoded) is kept: fetching everything at once measured slower
     * (GraphServiceBenchmark's query profile).
     */
    public <T> T readAll(String queryName, Function<TransactionContext, T> work) {
        return timed(queryName, () -> {
            try (Session session = driver.session(READ)) {
                return session.executeRead(work::apply);
            }
        });
    }

    /**
     * Like {@link #read} but a single attempt without the driver's retries: a health probe must answer
     * within the prober's timeout and report the state it found, not wait for Neo4j to come back.
     */
    public <T> List<T> readOnce(String queryName, String cypher, Map<String, Object> parameters,
                                Function<Record, T> mapper) {
        return timed(queryName, () -> {
            try (Session session = driver.session(READ)) {
                return session.run(cypher, parameters).list(mapper::apply);
            }
        });
    }

    private <T> T timed(String queryName, Supplier<T> query) {
        Timer.Sample sample = Timer.start(registry);
        String outcome = "error";
        try {
            T result = query.get();
            outcome = "success";
            return result;
        } finally {
            sample.stop(Timer.builder(TIMER_NAME)
                    .description("Time spent in Neo4j read transactions")
                    .tag("query", queryName)
                    .tag("outcome", outcome)
                    .register(registry));
        }
    }
}
