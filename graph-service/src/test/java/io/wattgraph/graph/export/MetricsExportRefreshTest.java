package io.wattgraph.graph.export;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.wattgraph.graph.model.ServiceGraphLoader;
import io.wattgraph.graph.neo4j.Neo4jReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Config;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;

/**
 * When Neo4j cannot be read, the export keeps serving its last snapshot until it is older than {@code stale-after},
 * then withdraws the graph's series rather than serve old values as current; the next successful read serves
 * again. A real Neo4j (harness), stopped under the export; the clock is the test's.
 */
class MetricsExportRefreshTest {

    @Test
    void aFailedReadKeepsTheSnapshotUntilStaleThenWithdrawsIt() throws Exception {
        AtomicLong clock = new AtomicLong(1_800_000_000_000_000_000L);
        Path dir = Files.createDirectories(Path.of("target", "neo4j-export-refresh"));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Neo4j neo4j = Neo4jBuilders.newInProcessBuilder(dir).withDisabledServer()
                .withConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                // Stop at once with the driver's connections open (as TestNeo4j).
                .withConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ZERO)
                .withConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ZERO).build();
        try (Driver driver = GraphDatabase.driver(neo4j.boltURI(), AuthTokens.none(), Config.builder()
                .withConnectionTimeout(2, java.util.concurrent.TimeUnit.SECONDS)
                .withMaxTransactionRetryTime(0, java.util.concurrent.TimeUnit.SECONDS).build())) {
            try (var session = driver.session()) {
                session.run("CREATE (:Container {id: 'c1', hostId: 'h1', podName: 'p', podNamespace: 'ns', powerW: 5.0, "
                        + "metricsWindowStartNs: $now - 10000000000, metricsWindowEndNs: $now})",
                        Map.of("now", clock.get())).consume();
            }
            Neo4jReader reader = new Neo4jReader(driver, registry);
            MetricsExport export = new MetricsExport(new GraphMetricsReader(reader, new ServiceGraphLoader(reader)),
                    registry, new MetricsExportProperties(true, Duration.ofSeconds(15), Duration.ofMinutes(5),
                    "service", 10, 10, 10, 10, true), clock::get);
            export.refresh();
            assertThat(registry.get("wattgraph.container.power").gauge().value()).isEqualTo(5.0);
            assertThat(registry.get("wattgraph.export.refresh").tag("outcome", "success").timer().count()).isOne();

            neo4j.close();
            clock.addAndGet(Duration.ofMinutes(4).toNanos());
            assertThatThrownBy(export::refresh).isInstanceOf(RuntimeException.class);
            assertThat(registry.get("wattgraph.container.power").gauge().value()).as("kept within stale-after")
                    .isEqualTo(5.0);
            assertThat(export.snapshot()).isNotNull();

            clock.addAndGet(Duration.ofMinutes(2).toNanos());
            assertThatThrownBy(export::refresh).isInstanceOf(RuntimeException.class);
            assertThat(registry.find("wattgraph.container.power").gauges()).as("withdrawn past stale-after").isEmpty();
            assertThat(export.snapshot()).isNull();
            assertThat(registry.get("wattgraph.export.refresh").tag("outcome", "error").timer().count()).isEqualTo(2);
        } finally {
            neo4j.close();
        }
    }
}
