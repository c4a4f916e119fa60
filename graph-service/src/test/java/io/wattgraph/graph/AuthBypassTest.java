package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping;

/**
 * Every route the running app maps (its handler mappings: controllers, springdoc, actuator, error), sent the
 * variants a scanner tries, without a token and with a read token: none is let through. Routes are enumerated
 * at run time, so a new controller is covered without touching this test. The paths open without a token are
 * stated here, independently of the code that opens them.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.auth.enabled=true", "wattgraph.auth.read-tokens=reader-1", "wattgraph.auth.admin-tokens=admin-1"})
@AutoConfigureObservability
class AuthBypassTest extends HarnessApiTest {

    /** GET/HEAD without a token; everything else needs a token. */
    static final Set<String> OPEN = Set.of("/", "/index.html", "/app.js", "/app.css", "/js/map.js",
            "/vendor/cytoscape.min.js", "/actuator/health",
            "/actuator/health/liveness", "/actuator/health/readiness", "/v3/api-docs");
    private static final String QUERY = "{\"query\": \"MATCH (h:Host) RETURN h.id AS id\"}";

    @LocalServerPort
    private int port;

    @Autowired
    private List<RequestMappingInfoHandlerMapping> mappings;

    record Route(String method, String path) {
    }

    /** A way of spelling a path, and the statuses a request spelled so may get without a token. */
    record Variant(String name, UnaryOperator<String> spell, Set<Integer> refused) {
    }

    private static final Set<Integer> UNAUTHORIZED = Set.of(401);
    private static final Set<Integer> MALFORMED = Set.of(400);

    static final List<Variant> VARIANTS = List.of(
            new Variant("plain", p -> p, UNAUTHORIZED),
            new Variant(";param after the first segment", p -> p.replaceFirst("^(/[^/]+)", "$1;x"), MALFORMED),
            new Variant(";param at the end", p -> p + ";jsessionid=1", MALFORMED),
            new Variant("first letters percent-encoded", AuthBypassTest::encodeFirstLetters, UNAUTHORIZED),
            new Variant("every letter percent-encoded", AuthBypassTest::encodeLetters, UNAUTHORIZED),
            new Variant("encoded slash", p -> atSecondSlash(p, "%2F"), MALFORMED),
            new Variant("encoded backslash", p -> atSecondSlash(p, "%5C"), MALFORMED),
            new Variant("double slash inside", p -> atSecondSlash(p, "//"), MALFORMED),
            new Variant("leading double slash", p -> "/" + p, MALFORMED),
            new Variant("dot segment", p -> atSecondSlash(p, "/./"), MALFORMED),
            new Variant("encoded dot segment", p -> atSecondSlash(p, "/%2e/"), MALFORMED),
            new Variant("dot-dot segment", p -> atSecondSlash(p, "/x/../"), MALFORMED),
            new Variant("trailing slash", p -> p + "/", UNAUTHORIZED),
            new Variant("upper case", p -> p.toUpperCase(), UNAUTHORIZED),
            new Variant("first segment upper case", AuthBypassTest::upperFirstSegment, UNAUTHORIZED));

    @Test
    void theReportedWalkAroundsAreRefused() throws Exception {
        RawHttp.Response cypher = RawHttp.send(port, "POST", "/api;x/v1/cypher", null, QUERY);
        assertThat(cypher.status()).as(cypher.body()).isEqualTo(400);
        assertThat(cypher.body()).doesNotContain("host-a").contains("\"error\"");
        RawHttp.Response hosts = RawHttp.send(port, "GET", "/%61pi/v1/hosts", null, null);
        assertThat(hosts.status()).as(hosts.body()).isEqualTo(401);
        assertThat(hosts.body()).doesNotContain("host-a");
        // The same spellings with tokens: routed like the plain path, with the plain path's rights.
        assertThat(RawHttp.send(port, "GET", "/%61pi/v1/hosts", "reader-1", null).status()).isEqualTo(200);
        assertThat(RawHttp.send(port, "POST", "/%61pi/v1/cypher", "reader-1", QUERY).status()).isEqualTo(403);
        assertThat(RawHttp.send(port, "POST", "/%61pi/v1/cypher", "admin-1", QUERY).status()).isEqualTo(200);
    }

    @Test
    void everyRouteRefusesEveryVariantWithoutAToken() throws Exception {
        List<Route> routes = routes();
        assertThat(routes).extracting(Route::path).contains("/api/v1/cypher", "/api/v1/hosts",
                "/api/v1/power/budgets/manual/host-a", "/v3/api-docs", "/actuator/prometheus", "/error");
        SoftAssertions soft = new SoftAssertions();
        int requests = 0;
        for (Route route : routes) {
            boolean open = OPEN.contains(route.path()) && (route.method().equals("GET") || route.method().equals("HEAD"));
            for (Variant v : VARIANTS) {
                String spelled = v.spell().apply(route.path());
                if (open && (v.refused() == UNAUTHORIZED || spelled.equals(route.path()))) {
                    continue; // the same open path, spelled differently
                }
                RawHttp.Response r = send(route.method(), spelled, null);
                requests++;
                soft.assertThat(r.status()).as("%s %s (%s): %s", route.method(), spelled, v.name(), r.body())
                        .isIn(v.refused());
                noData(soft, r, route + " " + v.name());
            }
            if (open) {
                soft.assertThat(send(route.method(), route.path(), null).status()).as("open " + route).isEqualTo(200);
            } else {
                for (String method : List.of("HEAD", "OPTIONS")) {
                    RawHttp.Response r = send(method, route.path(), null);
                    requests++;
                    soft.assertThat(r.status()).as(method + " " + route.path()).isEqualTo(401);
                }
                RawHttp.Response overlong = send(route.method(), route.path(), "a".repeat(6_000));
                soft.assertThat(overlong.status()).as("overlong token " + route).isEqualTo(401);
                RawHttp.Response tooLong = send(route.method(), route.path(), "a".repeat(20_000));
                soft.assertThat(tooLong.status()).as("token beyond the header limit " + route).isIn(400, 431);
                noData(soft, tooLong, route + " header too long");
                requests += 2;
            }
        }
        soft.assertAll();
        assertThat(requests).isGreaterThan(routes.size() * VARIANTS.size() / 2);
    }

    @Test
    void aReadTokenCannotReachAdminOperationsByAnySpelling() throws Exception {
        SoftAssertions soft = new SoftAssertions();
        for (Route route : routes()) {
            if (route.method().equals("GET") || route.method().equals("HEAD")) {
                continue;
            }
            for (Variant v : VARIANTS) {
                RawHttp.Response r = send(route.method(), v.spell().apply(route.path()), "reader-1");
                soft.assertThat(r.status()).as("%s %s (%s) with a read token: %s", route.method(),
                        v.spell().apply(route.path()), v.name(), r.body()).isIn(v.refused() == MALFORMED ? MALFORMED : Set.of(403));
                noData(soft, r, route + " " + v.name());
            }
        }
        soft.assertAll();
    }

    @Test
    void unknownPathsAreRefusedWithoutATokenNotAnswered404() throws Exception {
        for (String path : List.of("/nope", "/api/v1/nope", "/actuator/env", "/actuator/info", "/v3/api-docs.yaml",
                "/v3/api-docs/swagger-config", "/index.html/../app.js", "/vendor/../api/v1/hosts",
                "/vendor/%2e%2e/api/v1/hosts", "/js/..;/api/v1/hosts", "/vendor/x/../../api/v1/hosts",
                "/vendor/nope.js/api/v1/hosts")) {
            RawHttp.Response r = send("GET", path, null);
            assertThat(r.status()).as(path + ": " + r.body()).isIn(400, 401);
        }
        assertThat(send("GET", "/api/v1/nope", "reader-1").status()).isEqualTo(404);
    }

    private RawHttp.Response send(String method, String target, String token) throws Exception {
        String body = method.equals("POST") || method.equals("PUT") || method.equals("PATCH") ? QUERY : null;
        return RawHttp.send(port, method, target, token, body);
    }

    private static void noData(SoftAssertions soft, RawHttp.Response r, String what) {
        soft.assertThat(r.isSuccess()).as(what + " answered " + r.status()).isFalse();
        soft.assertThat(r.body()).as(what).doesNotContain("host-a").doesNotContain("\"rows\"");
    }

    /** Every (method, path) of every handler mapping, path variables filled in, catch-alls spelled out. */
    private List<Route> routes() {
        Set<Route> routes = new LinkedHashSet<>();
        for (RequestMappingInfoHandlerMapping mapping : mappings) {
            for (RequestMappingInfo info : mapping.getHandlerMethods().keySet()) {
                Set<RequestMethod> methods = info.getMethodsCondition().getMethods();
                List<String> names = new ArrayList<>();
                methods.forEach(m -> names.add(m.name()));
                if (names.isEmpty()) {
                    names.addAll(List.of("GET", "POST", "DELETE"));
                }
                for (String pattern : info.getPatternValues()) {
                    String path = pattern.replaceAll("\\{\\*[^}]+}", "liveness").replaceAll("\\{[^}]+}", "host-a")
                            .replace("/**", "/liveness");
                    names.forEach(m -> routes.add(new Route(m, path)));
                }
            }
        }
        for (String page : List.of("/", "/index.html", "/app.js", "/app.css", "/js/map.js", "/vendor/cytoscape.min.js")) {
            routes.add(new Route("GET", page));
        }
        return new ArrayList<>(routes);
    }

    private static String encodeFirstLetters(String path) {
        StringBuilder out = new StringBuilder();
        for (String segment : path.substring(1).split("/", -1)) {
            out.append('/');
            if (!segment.isEmpty() && Character.isLetter(segment.charAt(0))) {
                out.append(String.format("%%%02X", (int) segment.charAt(0))).append(segment.substring(1));
            } else {
                out.append(segment);
            }
        }
        return out.toString();
    }

    /** Replaces the slash after the first segment (the leading one of a one-segment path) with a spelling of it. */
    private static String atSecondSlash(String path, String slash) {
        int at = path.indexOf('/', 1);
        return at < 0 ? slash + path.substring(1) : path.substring(0, at) + slash + path.substring(at + 1);
    }

    private static String upperFirstSegment(String path) {
        int end = path.indexOf('/', 1);
        return end < 0 ? path.toUpperCase() : path.substring(0, end).toUpperCase() + path.substring(end);
    }

    private static String encodeLetters(String path) {
        StringBuilder out = new StringBuilder();
        for (char c : path.toCharArray()) {
            out.append(Character.isLetter(c) ? String.format("%%%02x", (int) c) : String.valueOf(c));
        }
        return out.toString();
    }
}
