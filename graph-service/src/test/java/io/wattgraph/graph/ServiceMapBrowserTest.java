package io.wattgraph.graph;

import java.util.Map;
import java.util.stream.Stream;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The service-map page (src/main/resources/static) in Debian's Chromium, driven by playwright-core as a person
 * uses it ({@code src/test/browser/service-map.test.mjs}), against the app on a random port over the shared
 * harness Neo4j ({@link GraphFixture}). Screenshots under {@code target/screenshots/}. Without Chromium or Node.js
 * the browser tests are skipped, and fail under {@code CI=true} ({@link BrowserScenarios#requireBrowser}).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ServiceMapBrowserTest {

    private static final String FILE = "service-map.test.mjs";

    @DynamicPropertySource
    static void neo4j(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
    }

    @BeforeAll
    static void requireBrowser() {
        BrowserScenarios.requireBrowser();
        TestNeo4j.deleteBudgetHistory(); // power.test.mjs: no budget published (this context's loop is off)
    }

    @LocalServerPort
    private int port;

    @Autowired
    private TestRestTemplate rest;

    /** The page and everything it loads come from this service: no CDN, no other origin. */
    @Test
    void pageAndLibrariesAreServedFromTheServiceItself() {
        ResponseEntity<String> index = rest.getForEntity("/", String.class);
        assertThat(index.getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(index.getBody()).contains("<div id=\"map\"").contains("app.js").doesNotContain("http://", "https://");
        for (String asset : List.of("/app.js", "/js/util.js", "/js/map.js", "/js/positions.js", "/js/charts.js",
                "/js/timerange.js", "/js/panels.js", "/js/power.js", "/js/routes.js", "/js/health.js")) {
            ResponseEntity<String> js = rest.getForEntity(asset, String.class);
            assertThat(js.getStatusCode()).as(asset).isEqualTo(HttpStatus.OK);
            assertThat(js.getBody()).as(asset).doesNotContain("https://").doesNotContain("innerHTML");
        }
        for (String lib : List.of("/vendor/layout-base.js", "/vendor/cose-base.js", "/vendor/cytoscape.min.js",
                "/vendor/cytoscape-fcose.js", "/vendor/uPlot.iife.min.js", "/vendor/uPlot.min.css", "/app.css")) {
            assertThat(rest.getForEntity(lib, String.class).getStatusCode()).as(lib).isEqualTo(HttpStatus.OK);
        }
    }

    /** One test per browser test of {@value #FILE}. */
    @TestFactory
    Stream<DynamicTest> browserTests() throws Exception {
        return BrowserScenarios.each(FILE, () -> port, Map.of());
    }

    /** The power panel's inputs and budgets ({@code power.test.mjs}). */
    @TestFactory
    Stream<DynamicTest> powerPanelTests() throws Exception {
        return BrowserScenarios.each("power.test.mjs", () -> port, Map.of());
    }

    /** HTTP routes of the selected node ({@code routes.test.mjs}). */
    @TestFactory
    Stream<DynamicTest> routesTests() throws Exception {
        return BrowserScenarios.each("routes.test.mjs", () -> port, Map.of());
    }

    /** A large map's overview style below zoom 2.4 ({@code large-map.test.mjs}). */
    @TestFactory
    Stream<DynamicTest> largeMapTests() throws Exception {
        return BrowserScenarios.each("large-map.test.mjs", () -> port, Map.of());
    }

    /** Accessibility: axe-core with the panels open, and the keyboard alone ({@code a11y.test.mjs}). */
    @TestFactory
    Stream<DynamicTest> accessibilityTests() throws Exception {
        return BrowserScenarios.each("a11y.test.mjs", () -> port, Map.of());
    }
}
