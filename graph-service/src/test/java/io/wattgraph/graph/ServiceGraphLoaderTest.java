package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.model.ServiceNode;
import io.wattgraph.graph.neo4j.Neo4jReader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.TransactionContext;

/**
 * The compact loader ({@link ServiceGraphLoader#load}: projected columns, one transaction) against the first,
 * row-per-edge one ({@link ServiceGraphLoader#loadRowPerEdge}) on the shared harness Neo4j ({@link GraphFixture}):
 * the same graph and group metrics for every kind of filter, and the fixture's values where they are known.
 */
class ServiceGraphLoaderTest {

    private static Driver driver;
    private static ServiceGraphLoader loader;
    private static SimpleMeterRegistry registry;

    @BeforeAll
    static void connect() {
        driver = GraphDatabase.driver(TestNeo4j.boltUri(), AuthTokens.none());
        registry = new SimpleMeterRegistry();
        loader = new ServiceGraphLoader(new Neo4jReader(driver, registry));
    }

    @AfterAll
    static void close() {
        driver.close();
    }

    @Test
    void compactLoadEqualsRowPerEdgeLoadForEveryFilter() {
        for (GraphFilter f : List.of(GraphFilter.NONE, new GraphFilter("host-a", null, null, null),
                new GraphFilter("host-b", null, null, null), new GraphFilter(null, "shop", null, null),
                new GraphFilter(null, null, 35L, 55L), new GraphFilter(null, null, null, 15L),
                new GraphFilter("host-b", "shop", 0L, 100L), new GraphFilter("no-such-host", null, null, null))) {
            ServiceGraphLoader.Loaded compact = loader.load(f);
            ServiceGraphLoader.Loaded rowPerEdge = loader.loadRowPerEdge(f);
            assertThat(compact.graph()).as(f.toString()).isEqualTo(rowPerEdge.graph());
            assertThat(compact.groupMetrics()).as(f.toString()).isEqualTo(rowPerEdge.groupMetrics());
        }
        assertThat(loader.load(new GraphFilter("no-such-host", null, null, null)).graph().edges()).isEmpty();
    }

    /**
     * Containers named by the stream job from the agents' pod metadata (podName, podNamespace, podLabels) give
     * their processes pod, namespace and, from the app label, service, in both loaders. Its own host, removed after.
     */
    @Test
    void podMetadataFromTheStreamJobNamesProcesses() {
        try (var session = driver.session()) {
            session.run("""
                    CREATE (h:Host {id: 'host-z'})
                    CREATE (c:Container {id: 'ctr-z', hostId: 'host-z', podName: 'checkout-5f7c9', podNamespace: 'shop-z',
                            podLabels: ['app=checkout', 'tier=web']})-[:RUNS_ON]->(h)
                    CREATE (p:Process {id: 'host-z/1/1', hostId: 'host-z', pid: 1, startTimeNs: 1, comm: 'java',
                            containerId: 'ctr-z'})-[:RUNS_ON]->(h)
                    CREATE (q:Process {id: 'host-z/2/2', hostId: 'host-z', pid: 2, startTimeNs: 2, comm: 'curl'})
                            -[:RUNS_ON]->(h)
                    CREATE (q)-[:TALKS_TO {bytesClientToServer: 1, bytesServerToClient: 2, connections: 1,
                            firstSeenNs: 1, lastSeenNs: 2}]->(p)
                    """).consume();
            try {
                GraphFilter f = new GraphFilter("host-z", null, null, null);
                ServiceGraphLoader.Loaded compact = loader.load(f);
                assertThat(compact.graph()).isEqualTo(loader.loadRowPerEdge(f).graph());
                ServiceNode java = compact.graph().nodesById().get("host-z/1/1");
                assertThat(java.pod()).isEqualTo("checkout-5f7c9");
                assertThat(java.namespace()).isEqualTo("shop-z");
                assertThat(java.service()).isEqualTo("checkout");
                assertThat(compact.graph().nodesById().get("host-z/2/2").pod()).isNull();
                assertThat(loader.load(new GraphFilter(null, "shop-z", null, null)).graph().nodesById())
                        .containsKey("host-z/1/1");
            } finally {
                session.run("MATCH (n) WHERE n.id IN ['host-z', 'ctr-z', 'host-z/1/1', 'host-z/2/2'] DETACH DELETE n")
                        .consume();
            }
        }
    }

    /**
     * The job writes a new process and its edge after the loader read the processes and before it reads the edges
     * (Neo4j isolates each query, not the transaction): the new end is that process, never an External node.
     */
    @Test
    void aProcessWrittenBetweenTheQueriesIsAProcessNotAnExternal() {
        Neo4jReader writesBeforeEdges = new Neo4jReader(driver, registry) {
            @Override
            public <T> T readAll(String queryName, Function<TransactionContext, T> work) {
                return super.readAll(queryName, tx -> work.apply((TransactionContext) Proxy.newProxyInstance(
                        getClass().getClassLoader(), new Class<?>[] {TransactionContext.class}, (proxy, m, args) -> {
                            if (m.getName().equals("run") && ServiceGraphLoader.EDGES_COMPACT.equals(args[0])) {
                                try (var writer = driver.session()) {
                                    writer.run("""
                                            CREATE (p:Process {id: 'host-y/7/7', hostId: 'host-y', pid: 7, startTimeNs: 7,
                                                    comm: 'fresh'})
                                            WITH p MATCH (s:Process {id: 'host-b/300/3000'})
                                            CREATE (p)-[:TALKS_TO {bytesClientToServer: 3, bytesServerToClient: 4,
                                                    connections: 1, firstSeenNs: 1, lastSeenNs: 2}]->(s)
                                            """).consume();
                                }
                            }
                            try {
                                return m.invoke(tx, args);
                            } catch (InvocationTargetException e) {
                                throw e.getCause();
                            }
                        })));
            }
        };
        try {
            ServiceNode fresh = new ServiceGraphLoader(writesBeforeEdges).load(GraphFilter.NONE).graph().nodesById()
                    .get("host-y/7/7");
            assertThat(fresh).isNotNull();
            assertThat(fresh.external()).isFalse();
            assertThat(fresh.name()).isEqualTo("fresh");
            assertThat(fresh.hostId()).isEqualTo("host-y");
        } finally {
            try (var session = driver.session()) {
                session.run("MATCH (p:Process {id: 'host-y/7/7'}) DETACH DELETE p").consume();
            }
        }
    }

    @Test
    void compactLoadReadsTheFixture() {
        ServiceGraphLoader.Loaded l = loader.load(GraphFilter.NONE);
        Map<String, ServiceNode> nodes = l.graph().nodesById();
        assertThat(nodes.keySet()).containsExactly("198.51.100.9", "203.0.113.7:443", "host-a/100/1000",
                "host-a/200/2000", "host-b/300/3000");
        ServiceNode nginx = nodes.get("host-a/100/1000");
        assertThat(nginx.kind()).isEqualTo("process");
        assertThat(nginx.processType()).isEqualTo("nginx");
        assertThat(nginx.pod()).isEqualTo("web-0");
        assertThat(nginx.namespace()).isEqualTo("shop");
        assertThat(nginx.service()).isEqualTo("web");
        assertThat(nginx.cores()).isEqualTo(4.0);
        assertThat(nginx.metrics().cpuUsage()).isEqualTo(0.4);
        assertThat(nginx.metrics().threads()).isEqualTo(2.0);
        assertThat(nginx.metrics().powerW()).isEqualTo(3.5);
        assertThat(nodes.get("host-a/200/2000").metrics().cpuUsage()).isNull(); // 'high': wrong type, absent
        assertThat(nodes.get("198.51.100.9").external()).isTrue();
        assertThat(nodes.get("203.0.113.7:443").external()).isTrue();
        ServiceEdge visitor = l.graph().edges().get(0);
        assertThat(visitor.source()).isEqualTo("198.51.100.9");
        assertThat(visitor.bytes()).isEqualTo(4040);
        assertThat(visitor.requestRate()).isEqualTo(50.0);
        assertThat(visitor.latencyP99Ms()).isEqualTo(20.0);
        assertThat(visitor.firstSeenNs()).isEqualTo(70L);
        // Written without an estimate: the observed count, nothing sampled.
        assertThat(visitor.connectionsEstimated()).isEqualTo(1.0);
        assertThat(visitor.connectionsSampled()).isZero();
        ServiceEdge curlToNginx = l.graph().edges().stream()
                .filter(e -> e.source().equals("host-a/200/2000")).findFirst().orElseThrow();
        assertThat(curlToNginx.connections()).isEqualTo(2);
        assertThat(curlToNginx.connectionsEstimated()).isEqualTo(5.0);
        assertThat(curlToNginx.connectionsSampled()).isEqualTo(1);
        // The stream job's ns properties, in ms: client RTT as latency*Ms unless the edge has its own latency*Ms.
        ServiceEdge toPostgres = l.graph().edges().stream()
                .filter(e -> e.target().equals("host-b/300/3000")).findFirst().orElseThrow();
        assertThat(toPostgres.latencyP50Ms()).isEqualTo(3.0);
        assertThat(toPostgres.latencyP90Ms()).isEqualTo(6.0);
        assertThat(toPostgres.latencyP99Ms()).isEqualTo(8.0); // latencyP99Ms: 8.0 wins over clientRttP99Ns (9 ms)
        assertThat(toPostgres.serverTimeP50Ms()).isEqualTo(2.5);
        assertThat(toPostgres.serverTimeP90Ms()).isEqualTo(5.0);
        assertThat(toPostgres.serverTimeP99Ms()).isEqualTo(7.0);
        assertThat(toPostgres.serverTimeAvgMs()).isNull();
        assertThat(toPostgres.networkTimeMs()).isEqualTo(0.4);
        ServiceNode postgres = nodes.get("host-b/300/3000");
        assertThat(postgres.metrics().latencyP90Ms()).isEqualTo(4.5); // serverTimeP90Ns
        assertThat(postgres.metrics().latencyAvgMs()).isNull();
        assertThat(postgres.metrics().utilization()).isEqualTo(0.3);
        assertThat(nginx.metrics().latencyAvgMs()).isEqualTo(12.5); // its own latencyAvgMs
        assertThat(l.groupMetrics().get("container:ctr-1").cpuUsage()).isEqualTo(0.5);
        assertThat(l.groupMetrics()).containsKeys("host:host-a", "host:host-b");
        // One timed transaction for the whole graph.
        assertThat(registry.get(Neo4jReader.TIMER_NAME).tag("query", "service_graph").timer().count()).isPositive();
    }
}
