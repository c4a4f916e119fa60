package io.wattgraph.graph.cypher;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.wattgraph.graph.InvalidParameterException;
import io.wattgraph.graph.neo4j.Neo4jDriverConfiguration;
import io.wattgraph.graph.neo4j.Neo4jProperties;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import org.neo4j.driver.AccessMode;
import org.neo4j.driver.Config;
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
 *   <li>at most {@code max-concurrent} queries at once (429 beyond), each on its own lane: a driver with one
 *       connection through a {@link WireBudget} that cuts it once Neo4j has sent {@code max-result-bytes} for
 *       the query, so no single record larger than that is ever decoded (bolt:// URIs; other schemes go
 *       direct and only the JSON budget applies);</li>
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
public class ReadOnlyCypher implements AutoCloseable {

    static final int FETCH_SIZE = 20;

    /** A driver for one query at a time, with the relay that bounds its bytes (null: direct). */
    private record Lane(Driver driver, WireBudget wire) {
    }

    private final Driver driver;
    private final CypherProperties limits;
    private final List<Lane> lanes = new ArrayList<>();
    private final BlockingQueue<Lane> idle;
    private volatile String database;
    private volatile Set<String> builtinFunctions;

    public ReadOnlyCypher(Driver driver, Neo4jProperties neo4j, CypherProperties limits, MeterRegistry meters) {
        this.driver = driver;
        this.limits = limits;
        this.idle = new ArrayBlockingQueue<>(limits.maxConcurrent());
        URI uri = URI.create(neo4j.uri());
        for (int i = 0; i < limits.maxConcurrent(); i++) {
            lanes.add(lane(uri, neo4j));
        }
        idle.addAll(lanes);
        Gauge.builder("wattgraph.cypher.running", idle, q -> limits.maxConcurrent() - q.size())
                .description("Cypher queries running now").register(meters);
    }

    private Lane lane(URI uri, Neo4jProperties neo4j) {
        if (!"bolt".equals(uri.getScheme())) {
            return new Lane(driver, null); // TLS or routing: a relay would break or be bypassed
        }
        try {
            WireBudget wire = new WireBudget(uri.getHost(), uri.getPort() < 0 ? 7687 : uri.getPort());
            Driver laneDriver = Neo4jDriverConfiguration.driver(neo4j, "bolt://127.0.0.1:" + wire.port(),
                    Config.builder().withMaxConnectionPoolSize(1));
            return new Lane(laneDriver, wire);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Queries running now. */
    public int running() {
        return limits.maxConcurrent() - idle.size();
    }

    @Override
    public void close() throws IOException {
        for (Lane lane : lanes) {
            if (lane.wire() != null) {
                lane.driver().close();
                lane.wire().close();
            }
        }
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
        Lane lane = idle.poll();
        if (lane == null) {
            throw new CypherRejectedException(HttpStatus.TOO_MANY_REQUESTS, "too many Cypher queries are running ("
                    + "wattgraph.cypher.max-concurrent=" + limits.maxConcurrent() + "); retry later");
        }
        try {
            return execute(lane, query, request.parameters() == null ? Map.of() : request.parameters(), maxRows,
                    timeout);
        } catch (Neo4jException e) {
            throw lane.wire() != null && lane.wire().tripped() ? tooLarge("Neo4j sent more than") : translate(e, timeout);
        } finally {
            idle.add(lane);
        }
    }

    private CypherRejectedException tooLarge(String what) {
        return new CypherRejectedException(HttpStatus.PAYLOAD_TOO_LARGE, "the result's first row: " + what
                + " wattgraph.cypher.max-result-bytes (" + limits.maxResultBytes().toBytes() + " bytes); return less per row");
    }

    private CypherResult execute(Lane lane, String query, Map<String, Object> parameters, int maxRows,
                                 Duration timeout) {
        String db = database();
        Set<String> functions = builtinFunctions(db);
        SessionConfig config = SessionConfig.builder().withDatabase(db).withDefaultAccessMode(AccessMode.READ)
                .withFetchSize(FETCH_SIZE).build();
        TransactionConfig tx = TransactionConfig.builder().withTimeout(timeout)
                .withMetadata(Map.of("app", "wattgraph-graph-service", "endpoint", "cypher")).build();
        if (lane.wire() != null) {
            lane.wire().begin(limits.maxResultBytes().toBytes());
        }
        Session session = lane.driver().session(config);
        try {
            Transaction t = session.beginTransaction(tx);
            try {
                ResultSummary plan = t.run("EXPLAIN " + query, parameters).consume();
                PlanGuard.check(plan, db, functions);
                return read(lane, t.run(query, parameters), maxRows);
            } finally {
                if (lane.wire() != null) {
                    lane.wire().end();
                }
                closeQuietly(t::close); // rolled back: nothing to keep, and it stops what the server still produces
            }
        } finally {
            closeQuietly(session::close);
        }
    }

    private CypherResult read(Lane lane, Result result, int maxRows) {
        List<String> columns = result.keys();
        List<List<Object>> rows = new ArrayList<>();
        ResultJson json = new ResultJson(limits.maxResultBytes().toBytes());
        String limit = null;
        try {
            while (result.hasNext()) {
                if (rows.size() == maxRows) {
                    limit = "maxRows";
                    break;
                }
                Record r = result.next();
                List<Object> row = new ArrayList<>(r.size());
                r.values().forEach(v -> row.add(json.convert(v)));
                rows.add(row);
            }
        } catch (ResultJson.OverBudget e) {
            if (rows.isEmpty()) {
                throw tooLarge("its JSON is larger than");
            }
            limit = "maxResultBytes";
        } catch (Neo4jException e) {
            if (lane.wire() == null || !lane.wire().tripped()) {
                throw e;
            }
            if (rows.isEmpty()) {
                throw tooLarge("Neo4j sent more than");
            }
            limit = "maxResultBytes";
        }
        return new CypherResult(columns, rows, rows.size(), limit != null, QueryType.READ_ONLY.name(), limit);
    }

    private static void closeQuietly(Runnable close) {
        try {
            close.run();
        } catch (RuntimeException e) {
            // the connection may have been cut by the wire budget; a read transaction has nothing to lose
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
