package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.harness.Neo4j;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The dashboards and alert rules of k8s/monitoring/ against a real Prometheus (Debian's {@code prometheus}, which
 * {@code bin/wattgraph setup} installs; skipped without it, a failure under {@code CI=true}) scraping this service
 * every second, with {@link ExportFixture}'s graph in a Neo4j of the test's own and the budget loop on against a
 * Kafka port nothing listens on (so it fails, as its alert should say):
 * <ul>
 *   <li>{@code promtool check rules} and {@code promtool test rules} (the rules' own unit tests) pass;</li>
 *   <li>every panel's query (and the namespace variable's) is accepted by Prometheus' HTTP API, and returns data
 *   when it reads graph-service's series; a query of the agents' or the Flink job's series (no agent or job runs
 *   here) names only series those components emit (found in node-agent/src and stream-jobs/src);</li>
 *   <li>every rule is loaded and evaluated without error; the stale host's and the failing loop's alerts match.</li>
 * </ul>
 */
class PrometheusMonitoringTest {

    private static final Path PROMETHEUS = Path.of("/usr/bin/prometheus");
    private static final Path PROMTOOL = Path.of("/usr/bin/promtool");
    private static final Path MONITORING = Path.of("..", "k8s", "monitoring").toAbsolutePath().normalize();
    private static final Path RULES = MONITORING.resolve("alerts/wattgraph-alerts.yaml");
    private static final Duration WAIT = Duration.ofSeconds(90);

    private static Neo4j neo4j;
    private static ConfigurableApplicationContext service;
    private static Process prometheus;
    private static Path work;
    private static String api;
    private static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final ObjectMapper json = new ObjectMapper();

    @BeforeAll
    static void start() throws Exception {
        if (!Files.isExecutable(PROMETHEUS) || !Files.isExecutable(PROMTOOL)) {
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                fail(PROMETHEUS + " or " + PROMTOOL + " is missing: Debian's 'prometheus' package (bin/wattgraph "
                        + "setup installs it)");
            }
            Assumptions.abort("Debian package 'prometheus' not installed: monitoring test skipped");
        }
        work = Files.createDirectories(Path.of("target", "prometheus-" + ProcessHandle.current().pid()))
                .toAbsolutePath();
        neo4j = TestNeo4j.startEmpty("prometheus-monitoring");
        long nowNs = System.currentTimeMillis() * 1_000_000L;
        ExportFixture.seed(neo4j.boltURI().toString(), nowNs);
        try (Driver driver = GraphDatabase.driver(neo4j.boltURI(), AuthTokens.none());
             var session = driver.session()) {
            // A host whose agent stopped 10 min ago: its window is stale.
            session.run("CREATE (:Host {id: 'node-3', powerW: 50.0, metricsWindowStartNs: $end - 10000000000, "
                    + "metricsWindowEndNs: $end})", Map.of("end", nowNs - 600_000_000_000L)).consume();
        }
        service = new SpringApplicationBuilder(GraphServiceApplication.class).properties("spring.main.banner-mode=off")
                .run("--server.port=0", "--server.address=127.0.0.1", "--wattgraph.neo4j.uri=" + neo4j.boltURI(),
                        "--wattgraph.metrics.export.refresh=1s",
                        "--wattgraph.power.budgets.enabled=true", "--wattgraph.power.budgets.period=2s",
                        "--wattgraph.power.budgets.bootstrap-servers=127.0.0.1:" + freePort(),
                        "--wattgraph.power.budgets.kafka-timeout=1s",
                        "--wattgraph.power.budgets.default-min-watts=10", "--wattgraph.power.budgets.default-max-watts=100",
                        "--logging.level.io.wattgraph.graph.power=ERROR", "--logging.level.org.apache.kafka=OFF");
        String servicePort = service.getEnvironment().getProperty("local.server.port");
        int port = freePort();
        Files.writeString(work.resolve("prometheus.yml"), """
                global:
                  scrape_interval: 1s
                  evaluation_interval: 1s
                rule_files:
                  - %s
                scrape_configs:
                  - job_name: graph-service
                    metrics_path: /actuator/prometheus
                    static_configs:
                      - targets: ['127.0.0.1:%s']
                """.formatted(RULES, servicePort));
        prometheus = new ProcessBuilder(PROMETHEUS.toString(), "--config.file=" + work.resolve("prometheus.yml"),
                "--storage.tsdb.path=" + work.resolve("data"), "--web.listen-address=127.0.0.1:" + port,
                "--log.level=warn").redirectErrorStream(true).redirectOutput(work.resolve("prometheus.log").toFile())
                .start();
        api = "http://127.0.0.1:" + port;
        await("Prometheus ready", () -> status(api + "/-/ready") == 200);
        // Three scrapes of a refreshed snapshot: rate() and increase() need two samples.
        await("three scrapes with the graph's series", () -> !query(
                "count_over_time(wattgraph_container_power_watts[1m]) >= 3").isEmpty());
    }

    @AfterAll
    static void stop() throws Exception {
        if (prometheus != null) {
            prometheus.destroy();
            if (!prometheus.waitFor(20, TimeUnit.SECONDS)) {
                prometheus.destroyForcibly().waitFor();
            }
        }
        if (service != null) {
            service.close();
        }
        if (neo4j != null) {
            neo4j.close();
        }
        if (work != null) {
            try (Stream<Path> files = Files.walk(work)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    @Test
    void promtoolChecksAndTestsTheRules() throws Exception {
        assertThat(run(PROMTOOL.toString(), "check", "rules", RULES.toString())).contains("SUCCESS: 14 rules found");
        assertThat(run(PROMTOOL.toString(), "test", "rules", "wattgraph-alerts.test.yaml")).contains("SUCCESS");
    }

    @Test
    void everyPanelQueryIsAcceptedAndReturnsDataWhereItReadsThisService() throws Exception {
        List<Path> dashboards;
        try (Stream<Path> files = Files.list(MONITORING.resolve("dashboards"))) {
            dashboards = files.filter(p -> p.toString().endsWith(".json")).sorted().toList();
        }
        assertThat(dashboards).hasSize(4);
        Map<String, String> queries = new LinkedHashMap<>();
        for (Path d : dashboards) {
            JsonNode board = json.readTree(d.toFile());
            collectTargets(board.get("panels"), d.getFileName() + ": ", queries);
            for (JsonNode variable : board.at("/templating/list")) {
                if (variable.path("type").asText().equals("query")) {
                    Matcher m = Pattern.compile("label_values\\((\\w+), (\\w+)\\)").matcher(variable.at("/query/query").asText());
                    assertThat(m.matches()).as("variable %s", variable.get("name")).isTrue();
                    JsonNode values = get(api + "/api/v1/label/" + m.group(2) + "/values?match[]=" + m.group(1));
                    assertThat(values.get("data")).as("values of $%s", variable.get("name")).isNotEmpty();
                }
            }
        }
        assertThat(queries).hasSizeGreaterThan(25);
        List<String> external = new ArrayList<>();
        for (Map.Entry<String, String> q : queries.entrySet()) {
            String expr = q.getValue().replace("$namespace", ".*").replace("$__rate_interval", "1m")
                    .replace("$__range", "1m");
            List<JsonNode> result = query(expr); // fails on a query Prometheus refuses
            if (externalSeries(expr).isEmpty()) {
                assertThat(result).as("%s returns data: %s", q.getKey(), expr).isNotEmpty();
            } else {
                external.add(expr);
            }
        }
        assertThat(external).as("queries of the agents' and the job's series").hasSizeGreaterThan(5);
        String rules = Files.readString(RULES) + Files.readString(MONITORING.resolve("alerts/wattgraph-alerts.test.yaml"));
        assertEmitted(String.join("\n", external) + "\n" + rules);
    }

    /**
     * Prometheus ingests the latency histograms as classic histograms: their counts add up by {@code le} and
     * {@code histogram_quantile} reads the bounds. c-web and c-db served 102 requests (ExportFixture); the median,
     * 200 us, lies in the octave 2^17..2^18 - 1 ns, so the interpolated median does too.
     */
    @Test
    void theLatencyHistogramsAreHistogramsToPrometheus() throws Exception {
        String count = "sum(wattgraph_container_server_time_histogram_seconds_count{namespace=\"shop\"})";
        await("the histograms scraped", () -> !query(count).isEmpty());
        assertThat(query(count).get(0).at("/value/1").asDouble()).isEqualTo(102.0);
        assertThat(query("sum(wattgraph_container_server_time_histogram_seconds_bucket{namespace=\"shop\",le=\"+Inf\"})")
                .get(0).at("/value/1").asDouble()).isEqualTo(102.0);
        double median = query("histogram_quantile(0.5, sum by (le) "
                + "(wattgraph_container_server_time_histogram_seconds_bucket{namespace=\"shop\"}))").get(0)
                .at("/value/1").asDouble();
        assertThat(median).isBetween(131_071e-9, 262_143e-9);
    }

    @Test
    void everyRuleIsEvaluatedAndTheStaleHostAndFailingLoopAlert() throws Exception {
        await("every rule evaluated", () -> {
            List<JsonNode> rules = new ArrayList<>();
            get(api + "/api/v1/rules").at("/data/groups").forEach(g -> g.get("rules").forEach(rules::add));
            return rules.size() == 14 && rules.stream().allMatch(r -> r.path("health").asText().equals("ok"));
        });
        List<String> names = new ArrayList<>();
        get(api + "/api/v1/rules").at("/data/groups").forEach(g -> g.get("rules").forEach(r -> {
            names.add(r.get("name").asText());
            query(r.get("query").asText()); // evaluates through the HTTP API too
        }));
        assertThat(names).contains("WattgraphAgentLosingEvents", "WattgraphJobLagging", "WattgraphBudgetLoopFailing");
        await("node-3 is the host not reporting", () -> query(rule("WattgraphHostNotReporting")).stream()
                .map(r -> r.at("/metric/host").asText()).toList().equals(List.of("node-3")));
        await("the budget loop fails at the topic stage", () -> query(rule("WattgraphBudgetLoopFailing")).stream()
                .anyMatch(r -> r.at("/metric/stage").asText().equals("topic")));
        assertThat(query(rule("WattgraphGraphNotUpdated"))).as("other hosts are fresh").isEmpty();
        assertThat(query(rule("WattgraphMetricsExportFailing"))).isEmpty();
    }

    /** Every panel target's expression, by dashboard and panel title (rows' panels included). */
    private static void collectTargets(JsonNode panels, String prefix, Map<String, String> out) {
        for (JsonNode p : panels) {
            if (p.has("panels")) {
                collectTargets(p.get("panels"), prefix, out);
            }
            for (JsonNode t : p.path("targets")) {
                out.put(prefix + p.get("title").asText() + " " + t.get("refId").asText(), t.get("expr").asText());
            }
        }
    }

    private static final Pattern EXTERNAL = Pattern.compile("\\b(wattgraph_agent_\\w+|flink_taskmanager_job_task_operator_\\w+)");

    private static TreeSet<String> externalSeries(String text) {
        TreeSet<String> names = new TreeSet<>();
        Matcher m = EXTERNAL.matcher(text);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    /**
     * The agents' series are named in node-agent/src as string literals; the job's are Flink's operator metrics
     * (currentInputWatermark) or a counter a stream-jobs operator registers under the last name segment.
     */
    private static void assertEmitted(String text) throws IOException {
        String agent = sources(Path.of("..", "node-agent", "src"), ".rs");
        String job = sources(Path.of("..", "stream-jobs", "src", "main"), ".java");
        for (String name : externalSeries(text)) {
            if (name.startsWith("wattgraph_agent_")) {
                assertThat(agent).as("node-agent emits %s", name).contains("\"" + name + "\"");
            } else {
                String metric = name.substring(name.lastIndexOf('_') + 1);
                if (!metric.equals("currentInputWatermark")) {
                    assertThat(registersCounter(job, metric)).as("a stream-jobs operator counts %s", name).isTrue();
                }
            }
        }
    }

    /** {@code counter("metric"}, or {@code counter(NAME} of a constant {@code NAME = "metric";}. */
    private static boolean registersCounter(String job, String metric) {
        if (job.contains("counter(\"" + metric + "\"")) {
            return true;
        }
        Matcher constant = Pattern.compile("\\b(\\w+) = \"" + Pattern.quote(metric) + "\";").matcher(job);
        while (constant.find()) {
            if (job.contains("counter(" + constant.group(1) + ",")) {
                return true;
            }
        }
        return false;
    }

    private static String sources(Path dir, String suffix) throws IOException {
        StringBuilder all = new StringBuilder();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(suffix)).toList()) {
                all.append(Files.readString(f));
            }
        }
        return all.toString();
    }

    private static String rule(String name) throws Exception {
        for (JsonNode g : get(api + "/api/v1/rules").at("/data/groups")) {
            for (JsonNode r : g.get("rules")) {
                if (r.get("name").asText().equals(name)) {
                    return r.get("query").asText();
                }
            }
        }
        throw new AssertionError("no rule " + name);
    }

    /** An instant query's result; fails when Prometheus refuses the query. */
    private static List<JsonNode> query(String expr) {
        try {
            JsonNode answer = get(api + "/api/v1/query?query=" + URLEncoder.encode(expr, StandardCharsets.UTF_8));
            assertThat(answer.path("status").asText()).as("%s: %s", expr, answer).isEqualTo("success");
            List<JsonNode> out = new ArrayList<>();
            JsonNode result = answer.at("/data/result");
            if (answer.at("/data/resultType").asText().equals("scalar")) {
                out.add(result);
            } else {
                result.forEach(out::add);
            }
            return out;
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static JsonNode get(String url) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        return json.readTree(r.body());
    }

    private static int status(String url) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException | InterruptedException e) {
            return -1;
        }
    }

    interface Check {
        boolean ok() throws Exception;
    }

    private static void await(String what, Check check) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!check.ok()) {
            if (System.nanoTime() > deadline) {
                String log = work == null ? "" : Files.readString(work.resolve("prometheus.log"));
                throw new AssertionError("not within " + WAIT + ": " + what + "\nprometheus.log:\n" + log);
            }
            Thread.sleep(250);
        }
    }

    private static String run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).directory(MONITORING.resolve("alerts").toFile())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command) + ":\n" + out).isZero();
        return out;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
