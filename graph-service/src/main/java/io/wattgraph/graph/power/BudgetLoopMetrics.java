package io.wattgraph.graph.power;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.wattgraph.schema.PowerBudgetPolicy;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The budget loop's meters (cycles, budgets published by policy, failures by stage) and its last error, which
 * {@code GET /api/v1/power/budgets/current} shows. A failure while the loop stops is no failure of the loop.
 */
final class BudgetLoopMetrics {

    private static final Logger log = LoggerFactory.getLogger(BudgetLoopMetrics.class);

    static final String PUBLISHED = "wattgraph.power.budgets.published";
    static final String FAILURES = "wattgraph.power.budgets.failures";
    static final String CYCLES = "wattgraph.power.budgets.cycles";

    private final MeterRegistry registry;
    private final BooleanSupplier stopped;
    private final LongSupplier clockNs;
    private volatile String lastError;
    private volatile Long lastErrorAtNs;

    BudgetLoopMetrics(MeterRegistry registry, BooleanSupplier stopped, LongSupplier clockNs) {
        this.registry = registry;
        this.stopped = stopped;
        this.clockNs = clockNs;
    }

    /** The gauge of hosts with a published budget, and every counter at zero. */
    void register(Map<String, ?> published) {
        Gauge.builder("wattgraph.power.budgets.hosts", published, Map::size)
                .description("Hosts with a published power budget").register(registry);
        // Registered up front so that dashboards see zeros rather than missing series.
        for (String stage : List.of("compute", "topic", "send", "history")) {
            counter(FAILURES, "stage", stage);
        }
        for (String policy : List.of("hyppo", "presto", "manual")) {
            counter(PUBLISHED, "policy", policy);
        }
        counter(CYCLES);
    }

    void cycle() {
        counter(CYCLES).increment();
    }

    void published(PowerBudgetPolicy policy) {
        counter(PUBLISHED, "policy", policy.name().toLowerCase(Locale.ROOT)).increment();
    }

    void fail(String stage, String message, Throwable e) {
        if (stopped.getAsBoolean()) { // interrupted by stop(): not a failure of the loop
            log.debug("power budgets, while stopping: {}", message);
            return;
        }
        lastError = message;
        lastErrorAtNs = clockNs.getAsLong();
        counter(FAILURES, "stage", stage).increment();
        if (e != null) {
            log.warn("power budgets: {}", message, e);
        } else {
            log.warn("power budgets: {}", message);
        }
    }

    String lastError() {
        return lastError;
    }

    Long lastErrorAtNs() {
        return lastErrorAtNs;
    }

    private Counter counter(String name, String... tags) {
        String description = switch (name) {
            case PUBLISHED -> "Power budgets published to Kafka, by policy";
            case FAILURES -> "Failures of the power-budget loop, by stage (compute, topic, send, history)";
            default -> "Cycles of the power-budget loop";
        };
        return Counter.builder(name).description(description).tags(tags).register(registry);
    }
}
