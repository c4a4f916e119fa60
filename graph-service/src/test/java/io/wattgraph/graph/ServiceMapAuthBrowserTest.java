package io.wattgraph.graph;

import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The service-map page with auth on, in Chromium ({@code src/test/browser/auth.test.mjs}): without a token it
 * shows the 401 and asks for one (no data); a read token typed into the page or given once in the fragment draws
 * the map and never appears in a URL; an admin token also runs the placement and power panels (POSTs).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.auth.enabled=true", "wattgraph.auth.read-tokens=page-reader", "wattgraph.auth.admin-tokens=page-admin"})
class ServiceMapAuthBrowserTest {

    private static final String FILE = "auth.test.mjs";

    @DynamicPropertySource
    static void neo4j(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
    }

    @BeforeAll
    static void requireBrowser() {
        BrowserScenarios.requireBrowser();
    }

    @LocalServerPort
    private int port;

    /** One test per browser test of {@value #FILE}. */
    @TestFactory
    Stream<DynamicTest> browserTests() throws Exception {
        return BrowserScenarios.each(FILE, () -> port, Map.of());
    }
}
