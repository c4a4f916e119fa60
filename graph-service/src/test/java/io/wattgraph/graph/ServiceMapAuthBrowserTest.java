package io.wattgraph.graph;

import static io.wattgraph.graph.ServiceMapBrowserTest.chromium;
import static io.wattgraph.graph.ServiceMapBrowserTest.count;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The service-map page with auth on, in headless Chromium: without a token it shows the 401 and asks for one
 * (no data); given a read token once in the fragment it draws the map, and an admin token also runs the
 * placement and power panels (POSTs). Screens and DOMs under {@code target/screenshots/service-map-auth-*}.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.auth.enabled=true", "wattgraph.auth.read-tokens=page-reader", "wattgraph.auth.admin-tokens=page-admin"})
class ServiceMapAuthBrowserTest {

    @DynamicPropertySource
    static void neo4j(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
    }

    @BeforeAll
    static void requireChromium() {
        ServiceMapBrowserTest.requireChromiumOrSkip();
    }

    @LocalServerPort
    private int port;

    private String dom(String name, String pathAndFragment) throws Exception {
        Path shots = Files.createDirectories(Path.of("target", "screenshots"));
        String dom = chromium(List.of("--window-size=1400,900", "--virtual-time-budget=5000", "--dump-dom",
                "http://127.0.0.1:" + port + pathAndFragment));
        Files.writeString(shots.resolve("service-map-auth-" + name + ".html"), dom);
        return dom;
    }

    @Test
    void withoutATokenThePageAsksForOne() throws Exception {
        String dom = dom("none", "/");
        assertThat(dom).contains("401").contains("type a bearer token above");
        assertThat(count(dom, "data-node-id=")).isZero();
    }

    @Test
    void aReadTokenInTheFragmentDrawsTheMap() throws Exception {
        String dom = dom("reader", "/#token=page-reader");
        assertThat(dom).contains("data-loaded=\"true\"").contains("data-node-id=\"host-a/100/1000\"");
        assertThat(count(dom, "data-edge-source=")).isEqualTo(4);
        assertThat(dom).doesNotContain("type a bearer token above");
    }

    @Test
    void anAdminTokenAlsoRunsThePanels() throws Exception {
        String dom = dom("admin", "/?run=placement,power#token=page-admin");
        assertThat(dom).contains("data-panels=\"done\"").contains("data-node-id=\"host-a/100/1000\"")
                .contains("kubectl patch deployment"); // the placement POST answered
        assertThat(dom).doesNotContain("needs an admin token");
    }
}
