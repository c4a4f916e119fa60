package io.wattgraph.graph.cypher;

import io.wattgraph.graph.InvalidParameterException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.neo4j.driver.AccessMode;
import org.neo4j.driver.Driver;
import org.neo4j.driver.Record;
import org.neo4j.driver.Result;
import org.neo4j.driver.Session;
import org.neo4j.driver.SessionConfig;
import org.neo4j.driver.TransactionConfig;
import org.neo4j.driver.Value;
import org.neo4j.driver.exceptions.ClientException;
import org.neo4j.driver.exceptions.Neo4jException;
import org.neo4j.driver.exceptions.ServiceUnavailableException;
import org.neo4j.driver.exceptions.SessionExpiredException;
import org.neo4j.driver.summary.QueryType;
import org.neo4j.driver.summary.ResultSummary;
import org.neo4j.driver.types.Node;
import org.neo4j.driver.types.Path;
import org.neo4j.driver.types.Relationship;
import org.neo4j.driver.types.TypeSystem;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;

/**
 * Runs a power user's query read-only, in three layers:
 * <ol>
 *   <li>a deny list for read-only operations that reach outside the graph: {@code LOAD CSV} (files, URLs),
 *       {@code USE} (another database such as {@code system}), {@code dbms.*} procedures;</li>
 *   <li>the plan: the query is first compiled with {@code EXPLAIN} (nothing runs) and refused unless Neo4j
 *       classifies it {@link QueryType#READ_ONLY}, so a write is refused even by a server that would accept
 *       it in a read session (a single instance does not route by access mode);</li>
 *   <li>the execution: a driver {@code executeRead} transaction in an {@link AccessMode#READ} session, with a
 *       transaction timeout, reading at most {@code maxRows} records.</li>
 * </ol>
 * The user's values reach Neo4j only as parameters; the query text is theirs by design, and nothing of the
 * service's is concatenated to it except the {@code EXPLAIN} prefix.
 */
@Component
public class ReadOnlyCypher {

    private static final SessionConfig READ = SessionConfig.builder().withDefaultAccessMode(AccessMode.READ).build();
    private static final Pattern LOAD_CSV = Pattern.compile("(?i)\\bLOAD\\s+CSV\\b");
    private static final Pattern USE = Pattern.compile("(?i)(^|[\\s{}])USE\\s");
    private static final Pattern DBMS = Pattern.compile("(?i)\\bdbms\\s*\\.");
    private static final TypeSystem TYPES = TypeSystem.getDefault();

    private final Driver driver;
    private final CypherProperties limits;

    public ReadOnlyCypher(Driver driver, CypherProperties limits) {
        this.driver = driver;
        this.limits = limits;
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
        for (var denied : List.of(Map.entry(LOAD_CSV, "LOAD CSV"), Map.entry(USE, "USE"), Map.entry(DBMS, "dbms.* procedures"))) {
            if (denied.getKey().matcher(query).find()) {
                throw new CypherRejectedException(HttpStatus.FORBIDDEN, denied.getValue() + " is not allowed here");
            }
        }
        Map<String, Object> parameters = request.parameters() == null ? Map.of() : request.parameters();
        TransactionConfig tx = TransactionConfig.builder().withTimeout(timeout).build();
        try (Session session = driver.session(READ)) {
            ResultSummary plan = session.executeRead(t -> t.run("EXPLAIN " + query, parameters).consume(), tx);
            if (plan.queryType() != QueryType.READ_ONLY) {
                throw new CypherRejectedException(HttpStatus.FORBIDDEN,
                        "only read-only queries are allowed; this one is " + plan.queryType());
            }
            return session.executeRead(t -> {
                Result result = t.run(query, parameters);
                List<String> columns = result.keys();
                List<List<Object>> rows = new ArrayList<>();
                while (rows.size() < maxRows && result.hasNext()) {
                    Record r = result.next();
                    List<Object> row = new ArrayList<>(r.size());
                    r.values().forEach(v -> row.add(toJson(v)));
                    rows.add(row);
                }
                boolean truncated = result.hasNext();
                return new CypherResult(columns, rows, rows.size(), truncated, QueryType.READ_ONLY.name());
            }, tx);
        } catch (Neo4jException e) {
            String code = e.code() == null ? "" : e.code();
            if (e instanceof ServiceUnavailableException || e instanceof SessionExpiredException) {
                throw e; // answered 503 by ApiExceptionHandler
            }
            if (code.contains("TransactionTimedOut") || code.contains("Terminated")) {
                throw new CypherRejectedException(HttpStatus.REQUEST_TIMEOUT,
                        "query exceeded its time limit of " + timeout.toMillis() + " ms");
            }
            if (code.contains("Forbidden") || code.contains("AccessMode")) {
                throw new CypherRejectedException(HttpStatus.FORBIDDEN, e.getMessage());
            }
            if (e instanceof ClientException) {
                throw new CypherRejectedException(HttpStatus.BAD_REQUEST, e.getMessage());
            }
            throw e;
        }
    }

    static Object toJson(Value v) {
        if (v.isNull()) {
            return null;
        }
        if (v.hasType(TYPES.NODE())) {
            Node n = v.asNode();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("elementId", n.elementId());
            List<String> labels = new ArrayList<>();
            n.labels().forEach(labels::add);
            m.put("labels", labels);
            m.put("properties", properties(n.asMap(ReadOnlyCypher::toJson)));
            return m;
        }
        if (v.hasType(TYPES.RELATIONSHIP())) {
            Relationship r = v.asRelationship();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("elementId", r.elementId());
            m.put("type", r.type());
            m.put("startElementId", r.startNodeElementId());
            m.put("endElementId", r.endNodeElementId());
            m.put("properties", properties(r.asMap(ReadOnlyCypher::toJson)));
            return m;
        }
        if (v.hasType(TYPES.PATH())) {
            Path p = v.asPath();
            List<Object> nodes = new ArrayList<>();
            p.nodes().forEach(n -> nodes.add(toJson(org.neo4j.driver.Values.value(n))));
            List<Object> rels = new ArrayList<>();
            p.relationships().forEach(r -> rels.add(toJson(org.neo4j.driver.Values.value(r))));
            return Map.of("nodes", nodes, "relationships", rels);
        }
        if (v.hasType(TYPES.LIST())) {
            return v.asList(ReadOnlyCypher::toJson);
        }
        if (v.hasType(TYPES.MAP())) {
            return properties(v.asMap(ReadOnlyCypher::toJson));
        }
        if (v.hasType(TYPES.BYTES())) {
            return Base64.getEncoder().encodeToString(v.asByteArray());
        }
        if (v.hasType(TYPES.INTEGER()) || v.hasType(TYPES.FLOAT()) || v.hasType(TYPES.BOOLEAN())
                || v.hasType(TYPES.STRING())) {
            return v.asObject();
        }
        return v.toString(); // temporal, duration, point: their Cypher text form
    }

    private static Map<String, Object> properties(Map<String, Object> map) {
        return new java.util.TreeMap<>(map);
    }
}
