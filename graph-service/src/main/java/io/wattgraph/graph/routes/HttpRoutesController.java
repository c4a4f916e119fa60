package io.wattgraph.graph.routes;

import io.wattgraph.graph.HostIdValidator;
import io.wattgraph.graph.RequestParams;
import java.util.List;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /api/v1/http-routes}: the HTTP/1.x routes of every process, container and host in their
 * latest window, slowest (p99) or busiest (rate, transactions) first: which endpoint of which
 * service is slow, without instrumenting it.
 */
@RestController
@RequestMapping("/api/v1")
public class HttpRoutesController {

    private static final HostIdValidator NAMES = new HostIdValidator();

    private final HttpRouteRepository repository;

    public HttpRoutesController(HttpRouteRepository repository) {
        this.repository = repository;
    }

    @GetMapping("/http-routes")
    public List<HttpRouteStat> routes(
            @RequestParam(name = "level", required = false) String level,
            @RequestParam(name = "host", required = false) String host,
            @RequestParam(name = "role", required = false) String role,
            @RequestParam(name = "sort", required = false) String sort,
            @RequestParam(name = "limit", required = false) String limit) {
        String lvl = RequestParams.oneOf("level", level, "process", "process", "container", "host");
        String r = RequestParams.oneOf("role", role, "server", "server", "client", "any");
        String by = RequestParams.oneOf("sort", sort, "p99", "p99", "rate", "transactions");
        int n = RequestParams.intInRange("limit", limit, 100, 1, 10_000);
        return repository.httpRoutes(lvl, host == null ? null : NAMES.validate("host", host),
                r.equals("any") ? null : r.toUpperCase(java.util.Locale.ROOT), by, n);
    }
}
