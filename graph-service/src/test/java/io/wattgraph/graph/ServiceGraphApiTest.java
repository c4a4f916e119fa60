package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.wattgraph.graph.analysis.ServiceGraphService;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

/** Aggregated graph, DOT export, projections and analyses over the shared harness Neo4j ({@link GraphFixture}). */
@AutoConfigureObservability
class ServiceGraphApiTest extends HarnessApiTest {

    private JsonNode get(String path, Object... vars) throws Exception {
        return getOk(path, vars);
    }

    private static List<String> ids(JsonNode graph) {
        List<String> ids = new ArrayList<>();
        graph.get("nodes").forEach(n -> ids.add(n.get("id").asText()));
        return ids;
    }

    @Test
    void processLevelCarriesProcessTypeKubernetesAndMetrics() throws Exception {
        JsonNode g = get("/api/v1/service-graph");
        assertThat(ids(g)).containsExactly("198.51.100.9", "203.0.113.7:443", "host-a/100/1000", "host-a/200/2000",
                "host-b/300/3000");
        JsonNode nginx = g.get("nodes").get(2);
        assertThat(nginx.get("processType").asText()).isEqualTo("nginx");
        assertThat(nginx.get("pod").asText()).isEqualTo("web-0");
        assertThat(nginx.get("namespace").asText()).isEqualTo("shop");
        assertThat(nginx.get("cores").asDouble()).isEqualTo(4.0);
        assertThat(nginx.at("/metrics/cpuUsage").asDouble()).isEqualTo(0.4);
        JsonNode curl = g.get("nodes").get(3);
        assertThat(curl.get("processType").asText()).isEqualTo("curl");
        assertThat(curl.at("/metrics/cpuUsage").isMissingNode()).isTrue(); // 'high' is not a number: absent
        assertThat(g.get("edges")).hasSize(4);
        assertThat(g.at("/edges/0/requestRate").asDouble()).isEqualTo(50.0);
        assertThat(g.at("/edges/0/latencyP99Ms").asDouble()).isEqualTo(20.0);
    }

    /** The stream job's estimate of sampled connections, or the observed count for edges written without one. */
    @Test
    void edgesCarryTheEstimatedConnections() throws Exception {
        JsonNode g = get("/api/v1/service-graph");
        JsonNode visitor = g.at("/edges/0");
        assertThat(visitor.get("source").asText()).isEqualTo("198.51.100.9");
        assertThat(visitor.get("connections").asLong()).isEqualTo(1);
        assertThat(visitor.get("connectionsEstimated").asDouble()).isEqualTo(1.0);
        assertThat(visitor.get("connectionsSampled").asLong()).isZero();
        JsonNode curl = null;
        for (JsonNode e : g.get("edges")) {
            if (e.get("source").asText().equals("host-a/200/2000")) {
                curl = e;
            }
        }
        assertThat(curl).isNotNull();
        assertThat(curl.get("connections").asLong()).isEqualTo(2);
        assertThat(curl.get("connectionsEstimated").asDouble()).isEqualTo(5.0);
        assertThat(curl.get("connectionsSampled").asLong()).isEqualTo(1);
        // Host level: curl -> nginx is host-a's self-loop.
        for (JsonNode e : get("/api/v1/service-graph?level=host").get("edges")) {
            if (e.get("source").asText().equals("host:host-a") && e.get("target").asText().equals("host:host-a")) {
                assertThat(e.get("connectionsEstimated").asDouble()).isEqualTo(5.0);
                return;
            }
        }
        throw new AssertionError("no host-a self-loop");
    }

    @Test
    void containerPodAndHostLevels() throws Exception {
        JsonNode container = get("/api/v1/service-graph?level=container");
        assertThat(ids(container)).contains("container:ctr-1").doesNotContain("host-a/100/1000");
        // The Container's own cpuUsage (0.5) wins over its process' (0.4).
        for (JsonNode n : container.get("nodes")) {
            if (n.get("id").asText().equals("container:ctr-1")) {
                assertThat(n.at("/metrics/cpuUsage").asDouble()).isEqualTo(0.5);
            }
        }
        assertThat(ids(get("/api/v1/service-graph?level=pod"))).contains("pod:shop/web-0");
        assertThat(ids(get("/api/v1/service-graph?level=service"))).contains("service:shop/web");
        assertThat(ids(get("/api/v1/service-graph?level=HOST")))
                .containsExactly("198.51.100.9", "203.0.113.7:443", "host:host-a", "host:host-b");
    }

    @Test
    void namespaceAndTimeFilters() throws Exception {
        JsonNode shop = get("/api/v1/service-graph?namespace=shop");
        assertThat(shop.get("edges")).hasSize(3); // every edge of nginx, the only process in namespace shop
        JsonNode window = get("/api/v1/service-graph?fromNs=35&toNs=55");
        List<String> pairs = new ArrayList<>();
        window.get("edges").forEach(e -> pairs.add(e.get("source").asText() + ">" + e.get("target").asText()));
        assertThat(pairs).containsExactly("host-a/100/1000>host-b/300/3000", "host-b/300/3000>203.0.113.7:443");
        assertThat(get("/api/v1/service-graph?host={h}", "host-b").get("edges")).hasSize(2);
        // Edges under half of the heaviest (nginx -> postgres, 7500 bytes) are dropped, with their lone nodes.
        assertThat(get("/api/v1/service-graph?minEdgeFraction=0.5").get("edges")).hasSize(2);
        assertThat(get("/api/v1/service-graph?namespace={n}", "x' OR 1=1 //").get("edges")).isEmpty();
    }

    @Test
    void dotExport() {
        ResponseEntity<String> r = rest.getForEntity("/api/v1/service-graph?level=host&format=dot", String.class);
        assertThat(r.getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(r.getHeaders().getContentType().toString()).startsWith("text/vnd.graphviz");
        assertThat(r.getBody()).startsWith("digraph wattgraph {")
                .contains("\"host:host-a\" -> \"host:host-b\" [penwidth=10.00");
    }

    @Test
    void projections() throws Exception {
        JsonNode hosts = get("/api/v1/projections/host");
        assertThat(hosts.get("labels").toString()).isEqualTo("[\"external\",\"host-a\",\"host-b\"]");
        assertThat(hosts.at("/bytes/1/2").asLong()).isEqualTo(500); // nginx -> postgres request bytes
        assertThat(hosts.at("/bytes/2/1").asLong()).isEqualTo(7000);
        assertThat(hosts.at("/bytes/1/1").asLong()).isEqualTo(2100); // curl <-> nginx on host-a
        JsonNode types = get("/api/v1/projections/process-type?host=host-a");
        assertThat(types.get("labels").toString()).isEqualTo("[\"curl\",\"external\",\"nginx\",\"postgres\"]");
    }

    @Test
    void answersReportTheAgeOfTheGraphTheyWereComputedFrom() {
        for (String path : List.of("/api/v1/analysis/operational", "/api/v1/analysis/critical-path",
                "/api/v1/projections/host", "/api/v1/service-graph")) {
            ResponseEntity<String> r = rest.getForEntity(path, String.class);
            assertThat(r.getStatusCode()).isEqualTo(HttpStatus.OK);
            String age = r.getHeaders().getFirst(ServiceGraphService.AGE_HEADER);
            assertThat(age).as(path).isNotNull().matches("[0-9]+");
        }
        // Not on answers that do not read the graph.
        assertThat(rest.getForEntity("/api/v1/hosts", String.class).getHeaders()
                .containsKey(ServiceGraphService.AGE_HEADER)).isFalse();
    }

    @Test
    void operationalAnalysisAndCriticalPath() throws Exception {
        JsonNode a = get("/api/v1/analysis/operational");
        // λ = 50 R/s from the visitor; pod web-0 (nginx): U = 0.4 / min(4 cores, 2 threads) = 0.2.
        assertThat(a.get("arrivalRate").asDouble()).isEqualTo(50.0);
        assertThat(a.get("bottleneck").asText()).isEqualTo("pod:shop/web-0");
        assertThat(a.at("/nodes/0/utilization").asDouble()).isEqualTo(0.2);
        assertThat(a.get("saturationArrivalRate").asDouble()).isEqualTo(250.0);
        assertThat(get("/api/v1/analysis/operational?arrivalRate=100").get("saturationArrivalRate").asDouble())
                .isEqualTo(500.0);

        // Edges from externals are pruned: the one internal edge with a p99 is nginx -> postgres (8 ms).
        JsonNode c = get("/api/v1/analysis/critical-path?percentile=p99&mode=longest");
        assertThat(c.get("path").toString()).isEqualTo("[\"pod:shop/web-0\",\"host-b/300/3000\"]");
        assertThat(c.get("totalLatencyMs").asDouble()).isEqualTo(8.0);
        assertThat(get("/api/v1/analysis/critical-path?percentile=p75").get("path")).isEmpty(); // no p75 anywhere
    }

    @Test
    void placementFromTheLiveGraph() throws Exception {
        ResponseEntity<String> r = rest.postForEntity("/api/v1/placement", java.util.Map.of(), String.class);
        assertThat(r.getStatusCode()).as(r.getBody()).isEqualTo(HttpStatus.OK);
        JsonNode p = json.readTree(r.getBody());
        // container:ctr-1 and curl on host-a, postgres on host-b; nginx -> postgres is 7500 bytes cross-host.
        assertThat(p.get("method").asText()).isEqualTo("exact");
        assertThat(p.get("crossNodeBytesBefore").asDouble()).isEqualTo(7500.0);
        assertThat(p.get("crossNodeBytesAfter").asDouble()).isZero();
        assertThat(p.get("nodesUsedBefore").asInt()).isEqualTo(2);
        assertThat(p.get("nodesUsedAfter").asInt()).isEqualTo(1);
        assertThat(p.get("feasible").asBoolean()).isTrue();
        assertThat(p.get("patches").size()).isEqualTo(p.get("moves").size());

        ResponseEntity<String> bad = rest.postForEntity("/api/v1/placement", java.util.Map.of("method", "magic"),
                String.class);
        assertThat(bad.getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
        assertThat(json.readTree(bad.getBody()).get("parameter").asText()).isEqualTo("method");
        ResponseEntity<String> dup = rest.postForEntity("/api/v1/placement", java.util.Map.of(
                "workloads", java.util.List.of(java.util.Map.of("id", "a", "cpu", 1, "memory", 1),
                        java.util.Map.of("id", "a", "cpu", 1, "memory", 1)),
                "nodes", java.util.List.of(java.util.Map.of("id", "n", "cpu", 4, "memory", 4))), String.class);
        assertThat(dup.getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
        assertThat(json.readTree(dup.getBody()).get("error").asText()).contains("unique");
    }

    @Test
    void powerBudgets() throws Exception {
        java.util.List<java.util.Map<String, Object>> hosts = java.util.List.of(
                java.util.Map.of("host", "host-a", "currentPowerW", 60.0, "actionablePowerW", 20.0, "idlePowerW", 30.0,
                        "minW", 20.0, "maxW", 120.0),
                java.util.Map.of("host", "host-b", "currentPowerW", 50.0, "actionablePowerW", 10.0, "idlePowerW", 25.0,
                        "minW", 20.0, "maxW", 100.0));
        // HyPPO from the graph: nginx (3.5 W, no cpuRequest) on host-a; host-b has no container with power.
        ResponseEntity<String> hyppo = rest.postForEntity("/api/v1/power/budgets",
                java.util.Map.of("policy", "hyppo", "hosts", hosts), String.class);
        assertThat(hyppo.getStatusCode()).as(hyppo.getBody()).isEqualTo(HttpStatus.OK);
        JsonNode h = json.readTree(hyppo.getBody());
        assertThat(h.at("/budgets/0/budgetW").asDouble()).isEqualTo(33.5);
        assertThat(h.at("/budgets/1/budgetW").asDouble()).isEqualTo(25.0);

        // PRESTO: entry pod web-0 (nginx) measured at 12.5 ms; SLA 10 ms -> no escape (12.5 < 20).
        ResponseEntity<String> presto = rest.postForEntity("/api/v1/power/budgets",
                java.util.Map.of("policy", "presto", "slaMs", 10.0, "hosts", hosts), String.class);
        assertThat(presto.getStatusCode()).as(presto.getBody()).isEqualTo(HttpStatus.OK);
        JsonNode p = json.readTree(presto.getBody());
        assertThat(p.get("entryPoint").asText()).isEqualTo("pod:shop/web-0");
        assertThat(p.get("slaEscape").asBoolean()).isFalse();
        assertThat(p.at("/budgets/0/reason").asText()).startsWith("Eq. 5.8");

        for (Object[] bad : new Object[][] {
                {java.util.Map.of("hosts", hosts), "policy"},
                {java.util.Map.of("policy", "presto", "hosts", hosts), "slaMs"},
                {java.util.Map.of("policy", "hyppo"), "hosts"},
                {java.util.Map.of("policy", "presto", "slaMs", 10.0, "entryPoint", "nope", "hosts", hosts), "entryPoint"}}) {
            ResponseEntity<String> r = rest.postForEntity("/api/v1/power/budgets", bad[0], String.class);
            assertThat(r.getStatusCode()).as(r.getBody()).isEqualTo(HttpStatus.BAD_REQUEST);
            assertThat(json.readTree(r.getBody()).get("parameter").asText()).isEqualTo(bad[1]);
        }
    }

    @Test
    void badParametersAre400sNamingTheParameter() throws Exception {
        String[][] cases = {
                {"/api/v1/service-graph?level=galaxy", "level"},
                {"/api/v1/service-graph?format=xml", "format"},
                {"/api/v1/service-graph?minEdgeFraction=1.5", "minEdgeFraction"},
                {"/api/v1/service-graph?fromNs=yesterday", "fromNs"},
                {"/api/v1/service-graph?toNs=-1", "toNs"},
                {"/api/v1/service-graph?fromNs=10&toNs=5", "fromNs"},
                {"/api/v1/service-graph?namespace=", "namespace"},
                {"/api/v1/projections/host?host=%01", "host"},
                {"/api/v1/analysis/operational?arrivalRate=0", "arrivalRate"},
                {"/api/v1/analysis/critical-path?percentile=p42", "percentile"},
                {"/api/v1/analysis/critical-path?mode=shortest", "mode"},
        };
        for (String[] c : cases) {
            ResponseEntity<String> r = rest.getForEntity(java.net.URI.create(
                    rest.getRootUri() + c[0]), String.class);
            assertThat(r.getStatusCode()).as(c[0]).isEqualTo(HttpStatus.BAD_REQUEST);
            JsonNode body = json.readTree(r.getBody());
            assertThat(body.get("parameter").asText()).as(c[0]).isEqualTo(c[1]);
            assertThat(body.get("error").asText()).contains("'" + c[1] + "'");
        }
    }
}
