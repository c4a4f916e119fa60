package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The service-map page (src/main/resources/static) rendered by headless Chromium against the app on a random
 * port over the shared harness Neo4j ({@link GraphFixture}). Needs Debian's {@code chromium} at
 * {@code /usr/bin/chromium}: skipped when it is absent, except under {@code CI=true} where that is a failure.
 * The screenshot is kept under {@code target/screenshots/}. With the budget loop on: {@link ServiceMapBudgetLoopBrowserTest}.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ServiceMapBrowserTest {

    static final Path CHROMIUM = Path.of("/usr/bin/chromium");

    @DynamicPropertySource
    static void neo4j(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
    }

    @BeforeAll
    static void requireChromium() {
        requireChromiumOrSkip();
    }

    /** Skips the calling test class without Chromium, or fails it under {@code CI=true}. */
    static void requireChromiumOrSkip() {
        if (!Files.isExecutable(CHROMIUM)) {
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                fail(CHROMIUM + " is missing: the browser test needs Debian's 'chromium' package "
                        + "(bin/wattgraph setup installs it)");
            }
            Assumptions.abort(CHROMIUM + " not installed (Debian package 'chromium'): browser test skipped");
        }
    }

    @LocalServerPort
    private int port;

    @Autowired
    private TestRestTemplate rest;

    @Test
    void staticPageIsServedOpen() {
        ResponseEntity<String> index = rest.getForEntity("/", String.class);
        assertThat(index.getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(index.getBody()).contains("<svg id=\"map\"").contains("app.js").doesNotContain("http://", "https://");
        ResponseEntity<String> js = rest.getForEntity("/app.js", String.class);
        assertThat(js.getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(js.getBody()).doesNotContain("https://").doesNotContain("innerHTML");
        assertThat(rest.getForEntity("/app.css", String.class).getStatusCode()).isEqualTo(HttpStatus.OK);
    }

    @Test
    void rendersServiceMapHeatMapAndPanels() throws Exception {
        String url = "http://127.0.0.1:" + port + "/?run=placement,power";
        Path shots = Files.createDirectories(Path.of("target", "screenshots"));
        Path png = shots.resolve("service-map.png").toAbsolutePath();
        Files.deleteIfExists(png);
        chromium(List.of("--screenshot=" + png, "--window-size=1400,900", "--virtual-time-budget=5000", url));
        assertThat(png).exists();
        assertThat(Files.size(png)).isGreaterThan(10_000);

        String dom = chromium(List.of("--window-size=1400,900", "--virtual-time-budget=5000", "--dump-dom", url));
        Files.writeString(shots.resolve("service-map.html"), dom);
        assertThat(dom).contains("data-loaded=\"true\"");
        // Every process and external of the fixture is a node of the map.
        for (String id : List.of("host-a/100/1000", "host-a/200/2000", "host-b/300/3000", "198.51.100.9",
                "203.0.113.7:443")) {
            assertThat(dom).contains("data-node-id=\"" + id + "\"");
        }
        // Its four TALKS_TO edges, with bytes.
        assertThat(dom).contains("data-edge-source=\"host-a/100/1000\" data-edge-target=\"host-b/300/3000\" "
                + "data-bytes=\"7500\"");
        assertThat(dom).contains("data-edge-source=\"198.51.100.9\" data-edge-target=\"host-a/100/1000\" "
                + "data-bytes=\"4040\" data-latency-ms=\"20\"");
        assertThat(count(dom, "data-edge-source=")).isEqualTo(4);
        // Host x host heat-map: external, host-a, host-b -> 9 cells; nginx -> postgres is 500 bytes a -> b.
        assertThat(count(dom, "class=\"heat-cell\"")).isEqualTo(9);
        assertThat(dom).contains("data-from=\"host-a\" data-to=\"host-b\" data-bytes=\"500\"");
        assertThat(dom).contains("data-from=\"host-b\" data-to=\"host-a\" data-bytes=\"7000\"");
        // The panels ran (?run=placement,power): a power budget table for the fixture's hosts.
        assertThat(dom).contains("id=\"powerBudgets\"");
        assertThat(dom).contains("data-panels=\"done\"");
        // The critical path (widest over p99: nginx -> postgres, the one internal edge with a p99) is highlighted
        // on the map, that edge only, and listed.
        assertThat(dom).contains("class=\"edge critical\" data-edge-source=\"host-a/100/1000\" "
                + "data-edge-target=\"host-b/300/3000\" data-bytes=\"7500\" data-latency-ms=\"8\"");
        assertThat(count(dom, "class=\"edge critical\"")).isEqualTo(1);
        assertThat(dom).contains("class=\"node critical\" data-node-id=\"host-a/100/1000\"")
                .contains("class=\"node critical\" data-node-id=\"host-b/300/3000\"");
        assertThat(count(dom, "class=\"node critical\"")).isEqualTo(2);
        assertThat(dom).contains("<li data-path-node=\"host-a/100/1000\">")
                .contains("<li data-path-node=\"host-b/300/3000\">");
        // Served HTTP routes, slowest p99 first: nginx's POST /orders (30 ms) before postgres' GET /stats (20 ms).
        assertThat(dom).contains("id=\"routesTable\"");
        assertThat(dom.indexOf("POST /orders")).isPositive().isLessThan(dom.indexOf("GET /stats"));
        assertThat(dom).contains("GET /static/aaaaaaaa…").doesNotContain("GET /health");
        // The published-budgets panel says the loop is off (the default), with no budget table.
        assertThat(dom).contains("id=\"budgetLoopOff\"").contains("The budget loop is off")
                .doesNotContain("id=\"loopBudgets\"");
    }

    /**
     * Edge colours come from the stream job's properties (GraphFixture: clientRtt*Ns, serverTime*Ns on TALKS_TO):
     * p90 server time colours nginx -> postgres (5 ms, the highest: red) and curl -> nginx (1 ms: green) and leaves
     * the visitor edge (no server time) grey; client RTT p90 gives 6 and 1.5 ms; the detail panels list them.
     */
    @Test
    void colouresEdgesByTheChosenLatencyOfTheStreamJob() throws Exception {
        String base = "http://127.0.0.1:" + port + "/?percentile=p90&latencyOf=server&detail=";
        Path shots = Files.createDirectories(Path.of("target", "screenshots"));
        Path png = shots.resolve("service-map-latency.png").toAbsolutePath();
        Files.deleteIfExists(png);
        String edge = "host-a/100/1000%3Ehost-b/300/3000";
        chromium(List.of("--screenshot=" + png, "--window-size=1400,1100", "--virtual-time-budget=5000", base + edge));
        assertThat(png).exists();
        String dom = chromium(List.of("--window-size=1400,1100", "--virtual-time-budget=5000", "--dump-dom", base + edge));
        Files.writeString(shots.resolve("service-map-latency.html"), dom);
        assertThat(dom).contains("data-loaded=\"true\"");
        assertThat(dom).contains("data-edge-source=\"host-a/100/1000\" data-edge-target=\"host-b/300/3000\" "
                + "data-bytes=\"7500\" data-latency-ms=\"5\" data-latency-of=\"server\" data-colour=\"rgb(201,42,42)\"");
        assertThat(dom).contains("data-edge-source=\"host-a/200/2000\" data-edge-target=\"host-a/100/1000\" "
                + "data-bytes=\"2100\" data-latency-ms=\"1\" data-latency-of=\"server\" data-colour=\"rgb(43,138,62)\"");
        assertThat(dom).contains("data-edge-source=\"198.51.100.9\" data-edge-target=\"host-a/100/1000\" "
                + "data-bytes=\"4040\" data-latency-of=\"server\" data-colour=\"#aab4bf\"");
        assertThat(dom).contains("edge colour: p90 server time 1.0 ms");
        // The edge's detail: both latencies per percentile and the network time.
        assertThat(dom).contains("data-detail=\"host-a/100/1000&gt;host-b/300/3000\"")
                .contains("<tr data-row=\"client-p90\"><th>p90 client RTT</th><td class=\"num\">6.00 ms</td></tr>")
                .contains("<tr data-row=\"server-p90\"><th>p90 server time</th><td class=\"num\">5.00 ms</td></tr>")
                .contains("<tr data-row=\"client-p99\"><th>p99 client RTT</th><td class=\"num\">8.00 ms</td></tr>")
                .contains("<tr data-row=\"network\"><th>network time (mean RTT − server)</th>"
                        + "<td class=\"num\">0.40 ms</td></tr>");

        // Client RTT p90, and a node's detail (postgres: server time percentiles, utilisation).
        String client = "http://127.0.0.1:" + port + "/?percentile=p90&latencyOf=client&detail=host-b/300/3000";
        dom = chromium(List.of("--window-size=1400,1100", "--virtual-time-budget=5000", "--dump-dom", client));
        Files.writeString(shots.resolve("service-map-latency-client.html"), dom);
        assertThat(dom).contains("data-edge-target=\"host-b/300/3000\" data-bytes=\"7500\" data-latency-ms=\"6\" "
                + "data-latency-of=\"client\" data-colour=\"rgb(201,42,42)\"");
        assertThat(dom).contains("data-edge-target=\"host-a/100/1000\" data-bytes=\"2100\" data-latency-ms=\"1.5\" "
                + "data-latency-of=\"client\" data-colour=\"rgb(43,138,62)\"");
        assertThat(dom).contains("edge colour: p90 client RTT 1.5 ms");
        assertThat(dom).contains("data-detail=\"host-b/300/3000\"")
                .contains("<tr data-row=\"server-p90\"><th>p90 server time</th><td class=\"num\">4.50 ms</td></tr>")
                .contains("<tr data-row=\"utilization\"><th>utilisation (Eq. 3.3)</th><td class=\"num\">30.0 %</td></tr>");
    }

    static int count(String s, String needle) {
        int n = 0;
        for (int i = s.indexOf(needle); i >= 0; i = s.indexOf(needle, i + 1)) {
            n++;
        }
        return n;
    }

    /** Runs headless Chromium with a fresh profile and returns its standard output. */
    static String chromium(List<String> args) throws IOException, InterruptedException {
        Path profile = Files.createTempDirectory("chromium-profile");
        List<String> cmd = new ArrayList<>(List.of(CHROMIUM.toString(), "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
                "--user-data-dir=" + profile.toAbsolutePath()));
        cmd.addAll(args);
        Path err = Files.createTempFile("chromium", ".log");
        Path out = Files.createTempFile("chromium", ".out");
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).redirectOutput(out.toFile()).start();
        // A guard against a hung browser, not a performance assertion.
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("chromium did not exit: " + Files.readString(err));
        }
        assertThat(p.exitValue()).as("chromium exit code; stderr:\n" + Files.readString(err)).isZero();
        return Files.readString(out, StandardCharsets.UTF_8);
    }
}
