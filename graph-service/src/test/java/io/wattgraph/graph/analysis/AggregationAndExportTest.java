package io.wattgraph.graph.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ProcessTypes;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Aggregation levels, DOT export and traffic projections on a hand-made graph (no Neo4j). */
class AggregationAndExportTest {

    static Metrics cpu(double cores) {
        return new Metrics(cores, 2.0, null, null, null, null, null, null, 5.0, null, null, null, null);
    }

    /** Two hosts; host a runs pod web-0 (containers c1: nginx + php, c2: sidecar), host b runs a Cassandra. */
    static ServiceGraph graph() {
        ServiceNode nginx = ServiceNode.process("a/1/1", "nginx", "a", "c1", "nginx", 4.0, cpu(0.5))
                .withKubernetes("web-0", "shop", "web");
        ServiceNode php = ServiceNode.process("a/2/1", "php-fpm", "a", "c1", "php-fpm", 4.0, cpu(1.0))
                .withKubernetes("web-0", "shop", "web");
        ServiceNode sidecar = ServiceNode.process("a/3/1", "envoy", "a", "c2", "envoy", 4.0, cpu(0.25))
                .withKubernetes("web-0", "shop", "web");
        ServiceNode cassandra = ServiceNode.process("b/4/1", "java", "b", null, "CassandraDaemon", 8.0, cpu(2.0));
        ServiceNode visitor = ServiceNode.external("198.51.100.9");
        return new ServiceGraph(List.of(nginx, php, sidecar, cassandra, visitor), List.of(
                ServiceEdge.traffic("198.51.100.9", "a/1/1", 100, 1000),
                ServiceEdge.traffic("a/1/1", "a/2/1", 200, 2000),
                ServiceEdge.traffic("a/2/1", "a/3/1", 10, 20),
                ServiceEdge.traffic("a/3/1", "b/4/1", 300, 3000)));
    }

    @Test
    void processTypeComesFromTheCommandLine() {
        assertThat(ProcessTypes.of("/usr/lib/jvm/bin/java -Xmx1g -cp /opt/spark/jars/* "
                + "org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url x", "java"))
                .isEqualTo("CoarseGrainedExecutorBackend");
        assertThat(ProcessTypes.of("java\0-jar\0/opt/app/orders.jar\0--port\0080", "java")).isEqualTo("orders.jar");
        assertThat(ProcessTypes.of("/usr/bin/python3.11 -u /srv/worker.py --queue q", "python3")).isEqualTo("worker.py");
        assertThat(ProcessTypes.of("python3 -m http.server 8000", "python3")).isEqualTo("python -m http.server");
        assertThat(ProcessTypes.of("nginx: worker process", "nginx")).isEqualTo("nginx");
        assertThat(ProcessTypes.of(null, "curl")).isEqualTo("curl");
        assertThat(ProcessTypes.of("/usr/sbin/sshd -D", null)).isEqualTo("sshd");
        assertThat(ProcessTypes.of(null, null)).isEqualTo("?");
    }

    @Test
    void containerLevelMergesProcessesAndPrefersMeasuredContainerMetrics() {
        ServiceGraph g = Aggregator.aggregate(graph(), Level.CONTAINER,
                Map.of("container:c2", cpu(0.75)));
        assertThat(g.nodes()).extracting(ServiceNode::id)
                .containsExactly("198.51.100.9", "b/4/1", "container:c1", "container:c2");
        Map<String, ServiceNode> byId = g.nodesById();
        assertThat(byId.get("container:c1").metrics().cpuUsage()).isEqualTo(1.5);
        assertThat(byId.get("container:c1").members()).isEqualTo(2);
        assertThat(byId.get("container:c1").processType()).isNull(); // nginx and php differ
        assertThat(byId.get("container:c2").metrics().cpuUsage()).isEqualTo(0.75); // measured wins
        assertThat(byId.get("container:c1").metrics().powerW()).isEqualTo(10.0);
        // nginx -> php is now inside c1: a self-loop with their bytes.
        assertThat(g.edges()).anySatisfy(e -> {
            assertThat(e.source()).isEqualTo("container:c1");
            assertThat(e.target()).isEqualTo("container:c1");
            assertThat(e.bytes()).isEqualTo(2200);
        });
    }

    /** Merged edges add their observed, estimated and sampled connections (an edge without sampling counts as observed). */
    @Test
    void mergedEdgesAddTheirEstimatedConnections() {
        ServiceEdge sampled = new ServiceEdge("a/1/1", "a/2/1", 200, 2000, 3, 9.5, 2, null, null, null, null, null,
                null, null, null, null, null, null, null, null, null);
        ServiceEdge other = ServiceEdge.traffic("a/3/1", "a/2/1", 10, 20);
        assertThat(other.connectionsEstimated()).isEqualTo(1.0);
        ServiceGraph g = Aggregator.aggregate(new ServiceGraph(graph().nodes(), List.of(sampled, other)), Level.POD,
                Map.of());
        assertThat(g.edges()).singleElement().satisfies(e -> {
            assertThat(e.source()).isEqualTo("pod:shop/web-0");
            assertThat(e.connections()).isEqualTo(4);
            assertThat(e.connectionsEstimated()).isEqualTo(10.5);
            assertThat(e.connectionsSampled()).isEqualTo(2);
        });
    }

    @Test
    void podServiceNamespaceAndHostLevels() {
        ServiceGraph pod = Aggregator.aggregate(graph(), Level.POD, Map.of());
        assertThat(pod.nodes()).extracting(ServiceNode::id).containsExactly("198.51.100.9", "b/4/1", "pod:shop/web-0");
        assertThat(pod.nodesById().get("pod:shop/web-0").name()).isEqualTo("web-0");
        assertThat(pod.nodesById().get("pod:shop/web-0").metrics().cpuUsage()).isEqualTo(1.75);

        assertThat(Aggregator.aggregate(graph(), Level.SERVICE, Map.of()).nodes()).extracting(ServiceNode::id)
                .contains("service:shop/web");
        assertThat(Aggregator.aggregate(graph(), Level.NAMESPACE, Map.of()).nodes()).extracting(ServiceNode::id)
                .contains("namespace:shop");

        ServiceGraph host = Aggregator.aggregate(graph(), Level.HOST, Map.of());
        assertThat(host.nodes()).extracting(ServiceNode::id).containsExactly("198.51.100.9", "host:a", "host:b");
        assertThat(host.edges()).hasSize(3);
        ServiceEdge cross = host.edges().stream().filter(e -> e.target().equals("host:b")).findFirst().orElseThrow();
        assertThat(cross.bytes()).isEqualTo(3300);
        assertThat(host.nodesById().get("host:a").cores()).isEqualTo(4.0);
    }

    @Test
    void dotHasEscapedIdsAndWidthsProportionalToBytes() {
        ServiceNode evil = ServiceNode.process("x\"y", "a\\b", "h\"1", null, "t", null, Metrics.NONE);
        ServiceGraph g = new ServiceGraph(List.of(evil, ServiceNode.external("e")),
                List.of(ServiceEdge.traffic("x\"y", "e", 1000, 0), ServiceEdge.traffic("e", "x\"y", 250, 250)));
        String dot = DotExporter.toDot(g);
        assertThat(dot).startsWith("digraph wattgraph {").endsWith("}\n");
        assertThat(dot).contains("\"x\\\"y\" [label=\"a\\\\b\\nt\"]");
        assertThat(dot).contains("label=\"h\\\"1\"");
        assertThat(dot).contains("\"x\\\"y\" -> \"e\" [penwidth=10.00, label=\"1000 B\"]");
        assertThat(dot).contains("\"e\" -> \"x\\\"y\" [penwidth=5.50, label=\"500 B\"]");
        assertThat(DotExporter.humanBytes(3L * 1024 * 1024)).isEqualTo("3.0 MiB");

        // BlackBox Fig. 7 styling: node line width from CPU (the busiest 5), and the heavy-edge filter.
        String styled = DotExporter.toDot(graph());
        assertThat(styled).contains("\"b/4/1\" [label=\"java\\nCassandraDaemon\", penwidth=5.00]");
        assertThat(styled).contains("\"a/3/1\" [label=\"envoy\", penwidth=1.50]");
        ServiceGraph heavy = DotExporter.heavyEdges(graph(), 0.5); // heaviest edge 3300 bytes: keep >= 1650
        assertThat(heavy.edges()).extracting(ServiceEdge::bytes).containsExactly(2200L, 3300L);
        assertThat(heavy.nodes()).extracting(ServiceNode::id).containsExactly("a/1/1", "a/2/1", "a/3/1", "b/4/1");
    }

    @Test
    void hostAndProcessTypeMatricesAreDirectional() {
        TrafficMatrix hosts = TrafficMatrix.byHost(graph());
        assertThat(hosts.labels()).containsExactly("a", "b", "external");
        assertThat(hosts.get("a", "a")).isEqualTo(200 + 2000 + 10 + 20);
        assertThat(hosts.get("a", "b")).isEqualTo(300);
        assertThat(hosts.get("b", "a")).isEqualTo(3000);
        assertThat(hosts.get("external", "a")).isEqualTo(100);
        assertThat(hosts.get("a", "external")).isEqualTo(1000);
        assertThat(hosts.totalBytes()).isEqualTo(6630);

        TrafficMatrix types = TrafficMatrix.byProcessType(graph());
        assertThat(types.labels()).containsExactly("CassandraDaemon", "envoy", "external", "nginx", "php-fpm");
        assertThat(types.get("CassandraDaemon", "envoy")).isEqualTo(3000);
        assertThat(types.get("nginx", "php-fpm")).isEqualTo(200);
    }
}
