package io.wattgraph.graph.cypher;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.wattgraph.graph.InvalidParameterException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Semaphore;
import org.neo4j.driver.AccessMode;
import org.neo4j.driver.Driver;
import org.neo4j.driver.Record;
import org.neo4j.driver.Result;
import org.neo4j.driver.Session;
import org.neo4j.driver.SessionConfig;
import org.neo4j.driver.Transaction;
import org.neo4j.driver.TransactionConfig;
import org.neo4j.driver.exceptions.ClientException;
import org.neo4j.driver.exceptions.Neo4jException;
import org.neo4j.driver.exceptions.ServiceUnavailableException;
import org.neo4j.driver.exceptions.SessionExpiredException;
import org.neo4j.driver.summary.QueryType;
import org.neo4j.driver.summary.ResultSummary;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;

/**
 * Runs a power user's query if Neo4j's plan shows it only reads the graph ({@link PlanGuard}), within bounds:
 * <ol>
 *   <li>at most {@code max-concurrent} queries at once (429 beyond);</li>
 *   <li>one explicit transaction in a READ session pinned to the home database: {@code EXPLAIN} (nothing
 *       runs), the guard, then the query itself; no retries (a query that failed once fails again);</li>
 *   <li>the transaction timeout (408), Neo4j's per-transaction memory limit {@code db.memory.transaction.max}
 *       (413), {@code maxRows} rows and {@code max-result-bytes} of JSON (cut, or 413 for a first row larger
 *       than that); records are fetched {@value #FETCH_SIZE} at a time so the driver holds few of them.</li>
 * </ol>
 * The user's values reach Neo4j only as parameters; nothing of the service's is concatenated to the query
 * text except the {@code EXPLAIN} prefix.
 */
@Component
public class ReadOnlyCypher {

    static final int FETCH_SIZE = 20;

    private final Driver driver;
    private final CypherProperties limits;
    private final Semaphore running;
    private volatile String database;
    private volatile Set<String> builtinFunctions;

    public ReadOnlyCypher(Driver driver, CypherProperties limits, MeterRegistry meters) {
        this.driver = driver;
        this.limits = limits;
        this.running = new Semaphore(limits.maxConcurrent());
        Gauge.builder("wattgraph.cypher.running", running, s -> limits.maxConcurrent() - s.availablePermits())
                .description("Cypher queries running now").register(meters);
    }

    /** Queries running now. */
    public int running() {
        return limits.maxConcurrent() - running.availablePermits();
    }

    public CypherResult run(CypherRequest request) {
        if (request == null || request.query() == null || request.query().isBlank()) {
            throw new InvalidParameterException("query", "must not be blank");
        }
        String query = request.query();
        if (query.length() > limits.maxQueryLength()) {
            throw new InvalidParameterException("query", "must be at most " + limits.maxQueryLength() + " characters");
        }
        int maxRows = request.maxRows() == null ? limits.defaultRows() : request.maxRows();
        if (maxRows < 1 || maxRows > limits.maxRows()) {
            throw new InvalidParameterException("maxRows", "must be between 1 and " + limits.maxRows());
        }
        Duration timeout = request.timeoutMs() == null ? limits.defaultTimeout() : Duration.ofMillis(request.timeoutMs());
        if (timeout.toMillis() < 1 || timeout.compareTo(limits.maxTimeout()) > 0) {
            throw new InvalidParameterException("timeoutMs", "must be between 1 and " + limits.maxTimeout().toMillis());
        }
        if (!running.tryAcquire()) {
            throw new CypherRejectedException(HttpStatus.TOO_MANY_REQUESTS, "too many Cypher queries are running ("
                    + "wattgraph.cypher.max-concurrent=" + limits.maxConcurrent() + "); retry later");
        }
        try {
            return execute(query, request.parameters() == null ? Map.of() : request.parameters(), maxRows, timeout);
        } catch (Neo4jException e) {
            throw translate(e, timeout);
        } finally {
            running.release();
        }
    }

    private CypherResult execute(String query, Map<String, Object> parameters, int maxRows, Duration timeout) {
        String db = database();
        Set<String> functions = builtinFunctions(db);
        SessionConfig config = SessionConfig.builder().withDatabase(db).withDefaultAccessMode(AccessMode.READ)
                .withFetchSize(FETCH_SIZE).build();
        TransactionConfig tx = TransactionConfig.builder().withTimeout(timeout)
                .withMetadata(Map.of("app", "wattgraph-graph-service", "endpoint", "cypher")).build();
        try (Session session = driver.session(config); Transaction t = session.beginTransaction(tx)) {
            ResultSummary plan = t.run("EXPLAIN " + query, parameters).consume();
            PlanGuard.check(plan, db, functions);
            Result result = t.run(query, parameters);
            List<String> columns = result.keys();
            List<List<Object>> rows = new ArrayList<>();
            ResultJson json = new ResultJson(limits.maxResultBytes().toBytes());
            String limit = null;
            while (result.hasNext()) {
                if (rows.size() == maxRows) {
                    limit = "maxRows";
                    break;
                }
                Record r = result.next();
                try {
                    List<Object> row = new ArrayList<>(r.size());
                    r.values().forEach(v -> row.add(json.convert(v)));
                    rows.add(row);
                } catch (ResultJson.OverBudget e) {
                    if (rows.isEmpty()) {
                        throw new CypherRejectedException(HttpStatus.PAYLOAD_TOO_LARGE, "the result's first row is "
                                + "larger than wattgraph.cypher.max-result-bytes (" + limits.maxResultBytes().toBytes()
                                + " bytes of JSON); return less per row");
                    }
                    limit = "maxResultBytes";
                    break;
                }
            }
            // Rolled back on close: nothing to keep, and it stops whatever the server was still producing.
            return new CypherResult(columns, rows, rows.size(), limit != null, QueryType.READ_ONLY.name(), limit);
        }
    }

    private RuntimeException translate(Neo4jException e, Duration timeout) {
        String code = e.code() == null ? "" : e.code();
        if (e instanceof ServiceUnavailableException || e instanceof SessionExpiredException) {
            return e; // answered 503 by ApiExceptionHandler
        }
        if (code.contains("TransactionTimedOut") || code.contains("Terminated")) {
            return new CypherRejectedException(HttpStatus.REQUEST_TIMEOUT,
                    "query exceeded its time limit of " + timeout.toMillis() + " ms");
        }
        if (code.contains("MemoryPoolOutOfMemoryError")) {
            return new CypherRejectedException(HttpStatus.PAYLOAD_TOO_LARGE, "query needs more memory than Neo4j "
                    + "allows one transaction (db.memory.transaction.max): " + e.getMessage());
        }
        if (code.contains("Forbidden") || code.contains("AccessMode")) {
            return new CypherRejectedException(HttpStatus.FORBIDDEN, e.getMessage());
        }
        if (e instanceof ClientException || code.startsWith("Neo.DatabaseError.Statement.")) {
            // The query's own fault, found while planning or running it (e.g. shortestPath from a node to itself).
            return new CypherRejectedException(HttpStatus.BAD_REQUEST, e.getMessage());
        }
        return e;
    }

    /** The home database of the service's Neo4j user, the only one this endpoint reads (asked once). */
    private String database() {
        String db = database;
        if (db == null) {
            try (Session session = driver.session(SessionConfig.builder().withDefaultAccessMode(AccessMode.READ).build())) {
                db = session.run("RETURN 1").consume().database().name();
            }
            database = db;
        }
        return db;
    }

    /** Lower-cased names of the built-in functions of the server (plugins' functions are not built in). */
    private Set<String> builtinFunctions(String db) {
        Set<String> names = builtinFunctions;
        if (names == null) {
            Set<String> loaded = new HashSet<>();
            try (Session session = driver.session(SessionConfig.builder().withDatabase(db)
                    .withDefaultAccessMode(AccessMode.READ).build())) {
                session.run("SHOW FUNCTIONS YIELD name, isBuiltIn WHERE isBuiltIn RETURN name")
                        .forEachRemaining(r -> loaded.add(r.get("name").asString().toLowerCase(Locale.ROOT)));
            }
            names = Set.copyOf(loaded);
            builtinFunctions = names;
        }
        return names;
    }
}
