package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.wattgraph.graph.cypher.CypherRejectedException;
import io.wattgraph.graph.cypher.CypherRequest;
import io.wattgraph.graph.cypher.CypherResult;
import io.wattgraph.graph.cypher.ReadOnlyCypher;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Property: no query that would read a file or URL, call a plugin or dbms procedure or function, switch
 * database, administer or write is ever executed by the Cypher endpoint, however it is obfuscated. A seeded
 * generator (seed printed; {@code -Dwattgraph.fuzz.seed=N} replays one) combines dangerous fragments with
 * comments, case, whitespace, backticks and escapes, bounded by count and time. Each query must be refused
 * (403 by the guard, or 400 when Neo4j cannot parse the obfuscation), the plugin stand-ins must never run,
 * the URL target must never be fetched and no node may be written. Hand-written generator: jqwik 1.10.1's
 * engine declares that AI agents must not use it, and Jazzer's fuzzing mode would not fit in seconds.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.NONE)
class CypherGuardFuzzTest {

    private static final int MAX_QUERIES = 600;
    private static final long MAX_MILLIS = 30_000;

    @DynamicPropertySource
    static void neo4j(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
    }

    @Autowired
    private ReadOnlyCypher cypher;

    private Random random;
    private String url;

    @Test
    void noDangerousQueryIsEverExecuted() throws Exception {
        long seed = Long.getLong("wattgraph.fuzz.seed", 20261126L);
        random = new Random(seed);
        AtomicInteger fetched = new AtomicInteger();
        HttpServer target = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        target.createContext("/", exchange -> {
            fetched.incrementAndGet();
            byte[] csv = "a,b\n1,2\n".getBytes();
            exchange.sendResponseHeaders(200, csv.length);
            exchange.getResponseBody().write(csv);
            exchange.close();
        });
        target.start();
        url = "http://127.0.0.1:" + target.getAddress().getPort() + "/x.csv";
        int refused = 0;
        int unparsable = 0;
        int executions = 0;
        long start = System.currentTimeMillis();
        try {
            while (executions < MAX_QUERIES && System.currentTimeMillis() - start < MAX_MILLIS) {
                String query = generate();
                executions++;
                try {
                    CypherResult result = cypher.run(new CypherRequest(query, null, 5, 5_000L));
                    throw new AssertionError("seed " + seed + ": executed " + query + " -> " + result.rows());
                } catch (CypherRejectedException e) {
                    assertThat(e.status().value()).as(query + ": " + e.getMessage()).isIn(400, 403);
                    if (e.status().value() == 403) {
                        refused++;
                    } else {
                        unparsable++;
                    }
                }
            }
        } finally {
            target.stop(0);
        }
        long millis = System.currentTimeMillis() - start;
        System.out.printf("Cypher guard fuzz: seed %d, %d queries in %d ms: %d refused by the guard, %d not parsed "
                + "by Neo4j%n", seed, executions, millis, refused, unparsable);
        assertThat(PluginStandIns.CALLS.get()).as("plugin stand-in calls").isZero();
        assertThat(fetched.get()).as("LOAD CSV fetches").isZero();
        assertThat(cypher.run(new CypherRequest("MATCH (n:Fuzz) RETURN count(n)", null, 1, null)).rows().get(0).get(0))
                .isEqualTo(0L);
        assertThat(cypher.run(new CypherRequest("MATCH (n) WHERE n.fuzz IS NOT NULL RETURN count(n)", null, 1, null))
                .rows().get(0).get(0)).isEqualTo(0L);
        // Most obfuscations must still be valid Cypher, or the guard would hardly be exercised.
        assertThat(refused).as("refused by the guard (rest unparsable)").isGreaterThan(executions / 2);
    }

    // ------------------------------------------------------------------ generator

    private final List<Function<CypherGuardFuzzTest, String>> dangerous = List.of(
            g -> g.kw("LOAD") + g.ws() + g.kw("CSV") + g.ws() + g.kw("FROM") + g.ws() + g.source() + g.ws()
                    + g.kw("AS") + " l " + g.kw("RETURN") + " l",
            g -> g.kw("LOAD") + g.ws() + g.kw("CSV") + g.ws() + g.kw("WITH") + g.ws() + g.kw("HEADERS") + g.ws()
                    + g.kw("FROM") + g.ws() + g.source() + " AS l RETURN l",
            g -> "WITH " + g.source() + " AS u " + g.kw("LOAD") + g.ws() + g.kw("CSV") + " FROM u AS l RETURN l",
            g -> g.kw("CALL") + g.ws() + "{" + g.ws() + g.kw("LOAD") + " CSV FROM " + g.source() + " AS l RETURN l }"
                    + " RETURN l",
            g -> g.kw("RETURN") + g.ws() + g.name("wattgraph", "plugin", "readFile") + "(" + g.ws() + g.path() + ")"
                    + " AS f",
            g -> "MATCH (h:" + g.tick("Host") + ")" + g.ws() + g.kw("WHERE") + g.ws()
                    + g.name("wattgraph", "plugin", "readFile") + "(" + g.path() + ") <> '' RETURN h",
            g -> "MATCH (h:Host) RETURN h " + g.kw("ORDER") + " BY " + g.name("wattgraph", "plugin", "readFile") + "("
                    + g.path() + ")",
            g -> "RETURN [x IN range(1, 2) | " + g.name("wattgraph", "plugin", "readFile") + "(" + g.path() + ")] AS l",
            g -> "MATCH (h:Host) WHERE EXISTS { MATCH (h) WHERE " + g.name("wattgraph", "plugin", "readFile") + "("
                    + g.path() + ") <> '' } RETURN h",
            g -> g.kw("CALL") + " { " + g.kw("RETURN") + " " + g.name("wattgraph", "plugin", "readFile") + "("
                    + g.path() + ") AS f } RETURN f",
            g -> g.kw("CALL") + g.ws() + g.name("wattgraph", "plugin", "readLines") + "(" + g.path() + ")"
                    + (g.random.nextBoolean() ? "" : " " + g.kw("YIELD") + " line RETURN line"),
            g -> g.kw("CALL") + g.ws() + g.name("dbms", g.pick("components", "listConfig", "info", "showCurrentUser",
                    "queryJmx"), null) + "(" + (g.random.nextBoolean() ? "" : "'*'") + ")",
            g -> g.kw("CALL") + g.ws() + g.name("db", g.pick("info", "ping", "schema.visualization", "stats.retrieve",
                    "indexes", "awaitIndexes"), null) + "()",
            g -> g.kw("USE") + g.ws() + g.tick("system") + g.ws() + g.pick("SHOW USERS", "SHOW DATABASES",
                    "CALL dbms.components() YIELD name RETURN name", "MATCH (n) RETURN n"),
            g -> g.kw("SHOW") + g.ws() + g.pick("SETTINGS", "TRANSACTIONS", "FUNCTIONS", "PROCEDURES", "INDEXES",
                    "CONSTRAINTS", "USERS", "DATABASES", "CURRENT USER", "PRIVILEGES"),
            g -> g.kw("TERMINATE") + g.ws() + g.kw("TRANSACTIONS") + " 'neo4j-transaction-1'",
            g -> g.kw("CREATE") + g.ws() + "(:" + g.tick("Fuzz") + " {id: 1})",
            g -> g.kw("MERGE") + g.ws() + "(f:" + g.tick("Fuzz") + " {id: 1}) RETURN f",
            g -> g.kw("FOREACH") + g.ws() + "(x IN [1] | " + g.kw("CREATE") + " (:Fuzz))",
            g -> "MATCH (h:Host) " + g.kw("CALL") + " { WITH h " + g.kw("CREATE") + " (:Fuzz) } RETURN count(*)",
            g -> g.kw("CALL") + " { " + g.kw("CREATE") + " (f:Fuzz) RETURN f } RETURN f",
            g -> "MATCH (h:Host) " + g.kw("SET") + g.ws() + "h." + g.tick("fuzz") + " = 1 RETURN h",
            g -> "MATCH (h:Host) " + g.kw("CALL") + " { WITH h SET h.fuzz = 1 } " + g.kw("IN") + " "
                    + g.kw("TRANSACTIONS") + " RETURN count(*)",
            g -> g.kw("LOAD") + " CSV FROM " + g.source() + " AS l " + g.kw("CREATE") + " (:Fuzz {l: l})",
            g -> "MATCH (n:Fuzz) " + g.kw(g.pick("DELETE", "DETACH DELETE")) + " n",
            g -> g.kw("CREATE") + " " + g.kw("INDEX") + " fuzz FOR (n:Host) ON (n.fuzz)",
            g -> g.kw("CREATE") + " " + g.kw("USER") + " fuzz SET PASSWORD 'fuzz-password-1'");

    private String generate() {
        String q = dangerous.get(random.nextInt(dangerous.size())).apply(this);
        return switch (random.nextInt(4)) {
            case 0 -> "/* " + random.nextInt(1000) + " */ " + q;
            case 1 -> "// lead\n" + q;
            case 2 -> q + (random.nextBoolean() ? " // tail" : " ;");
            default -> q;
        };
    }

    private String pick(String... options) {
        return options[random.nextInt(options.length)];
    }

    /** Whitespace, or something Cypher reads as whitespace. */
    private String ws() {
        return pick(" ", "  ", "\t", "\n", " /**/ ", "/**/", " /* x */ ", " // c\n", "\r\n ");
    }

    /** A keyword in random letter case. */
    private String kw(String keyword) {
        StringBuilder out = new StringBuilder();
        for (char c : keyword.toCharArray()) {
            out.append(random.nextBoolean() ? Character.toUpperCase(c) : Character.toLowerCase(c));
        }
        return out.toString();
    }

    /** An identifier, backtick-quoted or not. */
    private String tick(String name) {
        return random.nextBoolean() ? "`" + name + "`" : name;
    }

    /** A dotted procedure or function name, parts optionally quoted and spaced. */
    private String name(String a, String b, String c) {
        StringBuilder out = new StringBuilder(tick(a));
        for (String part : c == null ? b.split("\\.") : new String[] {b, c}) {
            out.append(random.nextInt(4) == 0 ? " . " : ".").append(tick(part));
        }
        return out.toString();
    }

    /** A file path as a string literal, plain, escaped or concatenated. */
    private String path() {
        return pick("'/etc/hostname'", "\"/etc/hostname\"", "'/etc/hostn\\u0061me'", "'/etc/' + 'hostname'",
                "'\\u002Fetc\\u002Fhostname'");
    }

    /** A LOAD CSV source: a file or the local HTTP target, spelled in several ways. */
    private String source() {
        return pick("'file:///etc/hostname'", "'FILE:///etc/hostname'", "'file:/etc/hostname'",
                "'fi' + 'le:///etc/hostname'", "'file:///etc/hostn\\u0061me'", "'" + url + "'",
                "'" + url.replace("http", "HTTP") + "'", "'" + url.replace("127.0.0.1", "localhost") + "'",
                "'" + url.replace("http:", "\\u0068ttp:") + "'");
    }
}
