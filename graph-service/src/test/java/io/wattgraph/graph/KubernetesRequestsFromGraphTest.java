package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.wattgraph.graph.analysis.Aggregator;
import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.neo4j.Neo4jReader;
import io.wattgraph.graph.power.Budget;
import io.wattgraph.graph.power.HostPower;
import io.wattgraph.graph.power.Hyppo;
import io.wattgraph.graph.power.PowerBudgetService;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;

/**
 * The Kubernetes requests the stream job writes onto Container nodes ({@code cpuRequest} cores,
 * {@code memoryRequestBytes}; CgroupGraphWriter) on the shared harness Neo4j: HyPPO's requests and a pod's sums come
 * from them. Its own host, removed after.
 */
class KubernetesRequestsFromGraphTest {
    static final double MIB = 1 << 20;

    private static Driver driver;
    private static ServiceGraphLoader loader;

    @BeforeAll
    static void connect() {
        driver = GraphDatabase.driver(TestNeo4j.boltUri(), AuthTokens.none());
        loader = new ServiceGraphLoader(new Neo4jReader(driver, new SimpleMeterRegistry()));
    }

    @AfterAll
    static void close() {
        driver.close();
    }

    @Test
    void hyppoAndPodsTakeTheContainersRequests() {
        try (var session = driver.session()) {
            // api-0: container y1 requests 250m and 128Mi; its sidecar y2 has no requests (properties absent).
            session.run("""
                    CREATE (h:Host {id: 'host-y'})
                    CREATE (c1:Container {id: 'ctr-y1', hostId: 'host-y', podName: 'api-0', podNamespace: 'shop-y',
                            cpuUsage: 0.75, powerW: 2.0, memoryBytes: 64.0 * 1048576, cpuRequest: 0.25,
                            memoryRequestBytes: 134217728})-[:RUNS_ON]->(h)
                    CREATE (c2:Container {id: 'ctr-y2', hostId: 'host-y', podName: 'api-0', podNamespace: 'shop-y',
                            cpuUsage: 0.5, powerW: 1.0, memoryBytes: 200.0 * 1048576})-[:RUNS_ON]->(h)
                    CREATE (p:Process {id: 'host-y/1/1', hostId: 'host-y', pid: 1, startTimeNs: 1, comm: 'api',
                            containerId: 'ctr-y1', cpuUsage: 0.75, powerW: 2.0})-[:RUNS_ON]->(h)
                    CREATE (q:Process {id: 'host-y/2/2', hostId: 'host-y', pid: 2, startTimeNs: 2, comm: 'envoy',
                            containerId: 'ctr-y2', cpuUsage: 0.5, powerW: 1.0})-[:RUNS_ON]->(h)
                    CREATE (q)-[:TALKS_TO {bytesClientToServer: 1, bytesServerToClient: 2, connections: 1,
                            firstSeenNs: 1, lastSeenNs: 2}]->(p)
                    """).consume();
            try {
                ServiceGraphLoader.Loaded l = loader.load(new GraphFilter("host-y", null, null, null));
                ServiceGraph containers = Aggregator.aggregate(l.graph(), Level.CONTAINER, l.groupMetrics());
                List<Hyppo.ContainerPower> powers = PowerBudgetService.containerPowers(containers);
                assertThat(powers).containsExactlyInAnyOrder(
                        new Hyppo.ContainerPower("host-y", "container:ctr-y1", 2.0, 0.75, 0.25),
                        new Hyppo.ContainerPower("host-y", "container:ctr-y2", 1.0, 0.5, null));
                // Eq. 4.1: idle 10 + 3 W + (0.75 - 0.25) x 10 W/core; y2 without a request contributes nothing.
                Budget b = Hyppo.budgets(List.of(new HostPower("host-y", 13.0, 3.0, 10.0, 0, 100)), powers, 10).get(0);
                assertThat(b.budgetW()).isEqualTo(18.0);

                Metrics pod = Aggregator.aggregate(l.graph(), Level.POD, l.groupMetrics()).nodesById()
                        .get("pod:shop-y/api-0").metrics();
                assertThat(pod.cpuRequest()).isEqualTo(0.25);
                assertThat(pod.memoryRequestBytes()).isEqualTo(128 * MIB);
                assertThat(pod.memoryBytes()).isEqualTo(264 * MIB);
            } finally {
                session.run("MATCH (n) WHERE n.id IN ['host-y', 'ctr-y1', 'ctr-y2', 'host-y/1/1', 'host-y/2/2'] "
                        + "DETACH DELETE n").consume();
            }
        }
    }
}
