package io.wattgraph.graph;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;
import org.neo4j.harness.Neo4j;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The page when Neo4j or the stream job is down ({@code src/test/browser/down.test.mjs}): this class owns its
 * Neo4j (on a fixed Bolt port, so a new one takes the old one's place) and lets the browser test stop and start
 * it, and age the hosts' newest metrics window, through a small HTTP control server on loopback
 * ({@code WATTGRAPH_CONTROL}: POST /neo4j/stop, /neo4j/start, /windows?ageMs=N). The graph is
 * {@link ServiceMapLiveBrowserTest#CYPHER}; the cache is off and the driver does not retry, so every refresh
 * reads Neo4j once.
 */
@DirtiesContext
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"wattgraph.graph.cache-ttl=0s", "wattgraph.neo4j.max-retry-time=0s",
                "wattgraph.metrics.export.enabled=false"})
class ServiceMapDownBrowserTest {

    private static int boltPort;
    private static Neo4j neo4j;
    private static HttpServer control;

    @DynamicPropertySource
    static void neo4j(DynamicPropertyRegistry registry) throws Exception {
        if (neo4j == null) {
            boltPort = TestNeo4j.closedPort();
            start();
        }
        registry.add("wattgraph.neo4j.uri", () -> "bolt://127.0.0.1:" + boltPort);
    }

    /** A new Neo4j on the fixed port with the graph, its hosts' windows ending now. */
    private static synchronized void start() {
        neo4j = TestNeo4j.startEmpty("down", boltPort);
        long now = TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis());
        run(ServiceMapLiveBrowserTest.CYPHER, Map.of("now", now, "m", TimeUnit.MINUTES.toNanos(1)));
        windowsAged(0);
    }

    private static synchronized void stop() {
        if (neo4j != null) {
            neo4j.close();
            neo4j = null;
        }
    }

    /** Every host's latest metrics window ends {@code ageMs} before now. */
    private static synchronized void windowsAged(long ageMs) {
        long end = TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis() - ageMs);
        run("MATCH (h:Host) SET h.metricsWindowStartNs = $end - 10000000000, h.metricsWindowEndNs = $end",
                Map.of("end", end));
    }

    private static void run(String cypher, Map<String, Object> params) {
        try (Driver driver = GraphDatabase.driver(neo4j.boltURI(), AuthTokens.none());
             Session s = driver.session()) {
            s.run(cypher, params).consume();
        }
    }

    @BeforeAll
    static void startControl() throws IOException {
        BrowserScenarios.requireBrowser();
        control = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        control.createContext("/neo4j/stop", ex -> answer(ex, ServiceMapDownBrowserTest::stop));
        control.createContext("/neo4j/start", ex -> answer(ex, ServiceMapDownBrowserTest::start));
        control.createContext("/windows", ex -> answer(ex,
                () -> windowsAged(Long.parseLong(ex.getRequestURI().getQuery().replace("ageMs=", "")))));
        control.start();
    }

    private static void answer(HttpExchange ex, Runnable action) throws IOException {
        int code = 204;
        byte[] body = new byte[0];
        try {
            if (!"POST".equals(ex.getRequestMethod())) {
                code = 405;
            } else {
                action.run();
            }
        } catch (RuntimeException e) {
            code = 500;
            body = e.toString().getBytes(StandardCharsets.UTF_8);
        }
        ex.sendResponseHeaders(code, body.length == 0 ? -1 : body.length);
        if (body.length > 0) {
            ex.getResponseBody().write(body);
        }
        ex.close();
    }

    @AfterAll
    static void stopAll() {
        if (control != null) {
            control.stop(0);
        }
        stop();
    }

    @LocalServerPort
    private int port;

    @TestFactory
    Stream<DynamicTest> browserTests() throws Exception {
        return BrowserScenarios.each("down.test.mjs", () -> port,
                Map.of("WATTGRAPH_CONTROL", "http://127.0.0.1:" + control.getAddress().getPort()));
    }
}
