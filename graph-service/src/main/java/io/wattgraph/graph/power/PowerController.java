package io.wattgraph.graph.power;

import io.wattgraph.graph.ApiError;
import io.wattgraph.graph.HostIdValidator;
import io.wattgraph.graph.InvalidParameterException;
import io.wattgraph.graph.RequestParams;
import io.wattgraph.graph.analysis.ServiceGraphService;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /api/v1/power/budgets}: per-host power budgets for the next period, HyPPO (CPU-request driven)
 * or PRESTO (latency-SLA driven), computed on request. {@code GET /budgets/current}: the budgets the periodic
 * publisher ({@link BudgetPublisher}) last published to Kafka; {@code GET /budgets/history}: every budget it
 * published for a host over a time range ({@link BudgetHistoryStore}); {@code POST /budgets/manual} and
 * {@code DELETE /budgets/manual/{host}}: an administrator's MANUAL budget for a host (admin token when auth is on).
 */
@RestController
@RequestMapping("/api/v1/power")
public class PowerController {

    private final ServiceGraphService service;
    private final PowerBudgetService budgets;
    private final BudgetPublisher publisher;
    private final BudgetHistoryStore history;
    private final HostIdValidator hostIds;

    public PowerController(ServiceGraphService service, PowerBudgetService budgets, BudgetPublisher publisher,
                           BudgetHistoryStore history, HostIdValidator hostIds) {
        this.service = service;
        this.budgets = budgets;
        this.publisher = publisher;
        this.history = history;
        this.hostIds = hostIds;
    }

    @PostMapping("/budgets")
    public Object budgets(@RequestBody(required = false) PowerRequest r) {
        return budgets.compute(r).response();
    }

    /** The latest published budget per host, the last computed ones, MANUAL overrides and the last error. */
    @GetMapping("/budgets/current")
    public BudgetPublisher.Status current() {
        return publisher.status();
    }

    /** {@code GET /budgets/history}: a host's published budgets over [fromNs, toNs], oldest first. */
    public record BudgetHistoryView(String host, Long fromNs, Long toNs, int limit, boolean truncated,
                                    List<BudgetHistoryStore.Entry> budgets) {
    }

    /**
     * The budgets published for {@code host} computed in [fromNs, toNs], led by the one in force at fromNs; the newest
     * {@code limit} (default 1000, at most {@link BudgetHistoryStore#MAX_ENTRIES}), {@code truncated} when older ones
     * in the range were left out. A host never budgeted has an empty list.
     */
    @GetMapping("/budgets/history")
    public BudgetHistoryView history(@RequestParam(name = "host", required = false) String host,
                                     @RequestParam(name = "fromNs", required = false) String fromNs,
                                     @RequestParam(name = "toNs", required = false) String toNs,
                                     @RequestParam(name = "limit", required = false) String limit) {
        String h = hostIds.validate("host", host);
        Long from = RequestParams.nonNegativeLong("fromNs", fromNs);
        Long to = RequestParams.nonNegativeLong("toNs", toNs);
        if (from != null && to != null && from > to) {
            throw new InvalidParameterException("fromNs", "must not be after toNs");
        }
        int max = RequestParams.intInRange("limit", limit, 1000, 1, BudgetHistoryStore.MAX_ENTRIES);
        BudgetHistoryStore.Range r = BudgetHistoryStore.between(history.read(h), from, to, max);
        return new BudgetHistoryView(h, from, to, max, r.truncated(), r.budgets());
    }

    /** Body of {@code POST /budgets/manual}. */
    public record ManualRequest(String host, Double watts, String reason) {
    }

    /**
     * Sets a MANUAL budget for a host and publishes it at once (200 when Kafka acknowledged it, 202 when it
     * could not be published now: the loop renews it every period); it holds until deleted.
     */
    @PostMapping("/budgets/manual")
    public ResponseEntity<?> setManual(@RequestBody(required = false) ManualRequest r) {
        if (!publisher.enabled()) {
            return disabled();
        }
        if (r == null || r.host() == null || r.host().isBlank()) {
            throw new InvalidParameterException("host", "is required");
        }
        if (r.watts() == null || !Double.isFinite(r.watts())) {
            throw new InvalidParameterException("watts", "must be a number of watts");
        }
        BudgetPublisher.Outcome outcome;
        try {
            outcome = publisher.setManual(r.host(), r.watts(), r.reason());
        } catch (IllegalArgumentException e) {
            throw new InvalidParameterException(e.getMessage().startsWith("host") ? "host" : "watts", e.getMessage());
        } catch (BudgetPublisher.ManualStoreException e) {
            return unavailable(e);
        }
        return ResponseEntity.status(outcome.published() ? HttpStatus.OK : HttpStatus.ACCEPTED).body(outcome);
    }

    /** Ends a host's MANUAL budget: from the next period it follows the policy again. */
    @DeleteMapping("/budgets/manual/{host}")
    public ResponseEntity<?> clearManual(@PathVariable("host") String host) {
        if (!publisher.enabled()) {
            return disabled();
        }
        boolean cleared;
        try {
            cleared = publisher.clearManual(host);
        } catch (BudgetPublisher.ManualStoreException e) {
            return unavailable(e);
        }
        if (!cleared) {
            return ResponseEntity.status(HttpStatus.NOT_FOUND)
                    .body(new ApiError("host " + host + " has no manual budget", 404, "host"));
        }
        return ResponseEntity.noContent().build();
    }

    private static ResponseEntity<ApiError> unavailable(BudgetPublisher.ManualStoreException e) {
        return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).body(new ApiError(e.getMessage(), 503));
    }

    private static ResponseEntity<ApiError> disabled() {
        return ResponseEntity.status(HttpStatus.CONFLICT).body(new ApiError(
                "the budget publisher is disabled (wattgraph.power.budgets.enabled=false)", 409));
    }

    /**
     * {@code GET /api/v1/power/simulation}: the PRESTO closed-loop simulation (low, mid, high arrival rates on
     * PowerThesis Fig. 5.4's queueing model; see {@link PrestoSimulation}), to compare with PowerThesis Table 5.2.
     */
    @GetMapping("/simulation")
    public Object simulation(@RequestParam(name = "seed", required = false) String seed,
                             @RequestParam(name = "sequentialCalls", required = false) String sequential) {
        long s;
        try {
            s = seed == null ? 42L : Long.parseLong(seed);
        } catch (NumberFormatException e) {
            throw new InvalidParameterException("seed", "must be an integer");
        }
        String seq = RequestParams.oneOf("sequentialCalls", sequential, "false", "true", "false");
        List<PrestoSimulation.Outcome> rows = service.timed("power_simulation",
                () -> PrestoSimulation.table(s, seq.equals("true")));
        return Map.of("seed", s, "sequentialCalls", seq.equals("true"), "rows", rows,
                "table", PrestoSimulation.format(rows));
    }
}
