package io.wattgraph.graph;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The page over a graph seen in the last hours ({@link #CYPHER}, times relative to the start of the class),
 * in a Neo4j of its own: the time range decides what is drawn, nodes keep their positions when a range adds or
 * removes others (and across a reload), charts follow the selection and the range, a refresh keeps the view
 * ({@code src/test/browser/live.test.mjs}). The graph cache is off, so every refresh reads Neo4j.
 */
@DirtiesContext
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = "wattgraph.graph.cache-ttl=0s")
class ServiceMapLiveBrowserTest {

    /**
     * Two hosts; api (shop/api-0 on node-1) called by an outside client and calling postgres (shop/db-0) and
     * redis (infra/cache-0) on node-2 within the last hour, the last call under a minute ago; batch (jobs/batch-0
     * on node-1) called postgres 30-120 min ago and redis 2-3 h ago. api's container has seven windows of
     * history, two of them in the last five minutes and six in the last hour. $now is Unix ns, $m a minute in ns.
     */
    static final String CYPHER = """
            CREATE (n1:Host {id: 'node-1', cores: 8}), (n2:Host {id: 'node-2', cores: 8})
            CREATE (capi:Container {id: 'c-api', hostId: 'node-1', pod: 'api-0', namespace: 'shop', service: 'api',
                    historyWindowEndNs: [$now - 120 * $m, $now - 55 * $m, $now - 45 * $m, $now - 30 * $m,
                                         $now - 10 * $m, $now - 3 * $m, $now - $m],
                    historyRevision: [0, 0, 0, 0, 0, 0, 0],
                    historyCpuUsage: [0.2, 0.5, 0.6, 0.9, 1.2, 1.5, 1.1],
                    historyPowerW: [4.0, 6.0, 6.5, 8.0, 9.5, 11.0, 9.0],
                    historyRequestRate: [5.0, 20.0, 25.0, 40.0, 60.0, 80.0, 70.0]})-[:RUNS_ON]->(n1)
            CREATE (cdb:Container {id: 'c-db', hostId: 'node-2', pod: 'db-0', namespace: 'shop', service: 'db'})
                    -[:RUNS_ON]->(n2)
            CREATE (ccache:Container {id: 'c-cache', hostId: 'node-2', pod: 'cache-0', namespace: 'infra',
                    service: 'cache'})-[:RUNS_ON]->(n2)
            CREATE (cbatch:Container {id: 'c-batch', hostId: 'node-1', pod: 'batch-0', namespace: 'jobs',
                    service: 'batch'})-[:RUNS_ON]->(n1)
            CREATE (api:Process {id: 'node-1/10/1', hostId: 'node-1', pid: 10, startTimeNs: 1, comm: 'api',
                    cmdline: 'api --port 8080', containerId: 'c-api', cpuUsage: 1.1, powerW: 9.0, requestRate: 70.0,
                    serverTimeP50Ns: 2000000, serverTimeP90Ns: 5000000, serverTimeP99Ns: 9000000})
            CREATE (db:Process {id: 'node-2/20/1', hostId: 'node-2', pid: 20, startTimeNs: 1, comm: 'postgres',
                    cmdline: 'postgres -D /data', containerId: 'c-db', cpuUsage: 0.8})
            CREATE (cache:Process {id: 'node-2/30/1', hostId: 'node-2', pid: 30, startTimeNs: 1, comm: 'redis',
                    cmdline: 'redis-server', containerId: 'c-cache', cpuUsage: 0.1})
            CREATE (batch:Process {id: 'node-1/40/1', hostId: 'node-1', pid: 40, startTimeNs: 1, comm: 'batch',
                    cmdline: 'batch --nightly', containerId: 'c-batch', cpuUsage: 0.3})
            CREATE (api)-[:RUNS_ON]->(n1), (batch)-[:RUNS_ON]->(n1), (db)-[:RUNS_ON]->(n2), (cache)-[:RUNS_ON]->(n2)
            CREATE (api)-[:IN_CONTAINER]->(capi), (db)-[:IN_CONTAINER]->(cdb), (cache)-[:IN_CONTAINER]->(ccache),
                   (batch)-[:IN_CONTAINER]->(cbatch)
            CREATE (client:External {id: '203.0.113.50', address: '203.0.113.50'})
            CREATE (client)-[:TALKS_TO {bytesClientToServer: 9000, bytesServerToClient: 90000, connections: 30,
                    firstSeenNs: $now - 10 * $m, lastSeenNs: $now - $m / 3, clientRttP99Ns: 40000000}]->(api)
            CREATE (api)-[:TALKS_TO {bytesClientToServer: 4000, bytesServerToClient: 60000, connections: 12,
                    firstSeenNs: $now - 50 * $m, lastSeenNs: $now - $m / 2, clientRttP99Ns: 7000000}]->(db)
            CREATE (api)-[:TALKS_TO {bytesClientToServer: 800, bytesServerToClient: 3000, connections: 4,
                    firstSeenNs: $now - 40 * $m, lastSeenNs: $now - $m, clientRttP99Ns: 1000000}]->(cache)
            CREATE (batch)-[:TALKS_TO {bytesClientToServer: 100000, bytesServerToClient: 500, connections: 2,
                    firstSeenNs: $now - 120 * $m, lastSeenNs: $now - 30 * $m}]->(db)
            CREATE (batch)-[:TALKS_TO {bytesClientToServer: 2000, bytesServerToClient: 200, connections: 1,
                    firstSeenNs: $now - 180 * $m, lastSeenNs: $now - 120 * $m}]->(cache)
            """;

    static final long NOW_NS = TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis());
    @RegisterExtension
    static final ClassNeo4j NEO4J = new ClassNeo4j("live", CYPHER, Map.of("now", NOW_NS, "m", TimeUnit.MINUTES.toNanos(1)));

    @DynamicPropertySource
    static void neo4j(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", () -> NEO4J.boltUri().toString());
    }

    @BeforeAll
    static void requireBrowser() {
        BrowserScenarios.requireBrowser();
    }

    @LocalServerPort
    private int port;

    /** One test per browser test of live.test.mjs; the scripts get the graph's "now" (Unix ms). */
    @TestFactory
    Stream<DynamicTest> browserTests() throws Exception {
        return BrowserScenarios.each("live.test.mjs", () -> port,
                Map.of("WATTGRAPH_NOW_MS", Long.toString(TimeUnit.NANOSECONDS.toMillis(NOW_NS))));
    }
}
