package io.wattgraph.graph.power;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.micrometer.core.instrument.MeterRegistry;
import io.wattgraph.graph.power.ManualBudgetStore.Manual;
import io.wattgraph.schema.PowerBudget;
import io.wattgraph.schema.PowerBudgetPolicy;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * The power-budget control loop ({@code wattgraph.power.budgets.enabled=true}): every period it derives the
 * hosts' power state from the live graph, computes their budgets with {@link PowerBudgetService} (the same
 * computation as {@code POST /api/v1/power/budgets}) and publishes one {@link PowerBudget} per host to the
 * compacted topic {@code wattgraph.power-budgets} ({@link BudgetSender}), with an idempotent producer. A host with a
 * MANUAL budget set by an administrator ({@link ManualBudgets}) gets that budget, renewed every period, until it is
 * cleared.
 *
 * <p>Sequences increase per host even if the clock steps back ({@link BudgetRecords}). A record is sent once: when
 * Kafka (or Neo4j) is down the cycle counts the failure ({@link BudgetLoopMetrics}) and drops that record, and the
 * next cycle computes and sends a fresh one with a higher sequence. So Kafka never receives a stale budget after a
 * newer one, nor a sequence twice, and the loop never stops. A cycle waits for Kafka at most about
 * {@code kafka-timeout} (topic creation) plus twice it (delivery).
 */
@Component
public class BudgetPublisher implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(BudgetPublisher.class);

    private final BudgetPublisherProperties props;
    private final PowerBudgetService service;
    private final BudgetLoopMetrics metrics;
    private final BudgetRecords records;
    private final ManualBudgets manual;
    private final BudgetSender sender;
    private final BudgetHistory history;

    private final Object stateLock = new Object(); // the executor's; never held while waiting for Kafka
    private ScheduledExecutorService executor;
    private volatile boolean stopped;
    private volatile Long lastCycleAtNs;

    public BudgetPublisher(BudgetPublisherProperties props, PowerBudgetService service, MeterRegistry registry,
                           ManualBudgetStore store, BudgetHistoryStore historyStore) {
        this.props = props;
        this.service = service;
        this.metrics = new BudgetLoopMetrics(registry, () -> stopped, BudgetPublisher::nowNs);
        this.records = new BudgetRecords(props.period());
        this.manual = new ManualBudgets(store);
        this.sender = new BudgetSender(props, metrics, () -> stopped, records::published);
        this.history = new BudgetHistory(historyStore, props.historyEntries());
        if (props.enabled()) {
            props.validate();
            metrics.register(records.publishedByHost());
        }
    }

    /** What a publish attempt did with one record. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Outcome(BudgetView budget, boolean published, String error) {
    }

    /** A PowerBudget as JSON (the Avro record itself does not serialise with Jackson). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record BudgetView(String hostId, long sequence, String policy, long computedAtNs, long validUntilNs,
                             double budgetWatts, double minWatts, double maxWatts, Double previousWatts,
                             String reason) {
        static BudgetView of(PowerBudget b) {
            return new BudgetView(b.getHostId(), b.getSequence(), b.getPolicy().name(), b.getComputedAtNs(),
                    b.getValidUntilNs(), b.getBudgetWatts(), b.getMinWatts(), b.getMaxWatts(), b.getPreviousWatts(),
                    b.getReason());
        }
    }

    /** {@code GET /api/v1/power/budgets/current}. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Status(boolean enabled, String topic, String policy, Long periodMs, List<BudgetView> budgets,
                         List<BudgetView> lastComputed, Map<String, Manual> manual, Long lastCycleAtNs,
                         String lastError, Long lastErrorAtNs) {
    }

    /** Neo4j could not store or delete a MANUAL budget (the in-memory state is left as it was). */
    public static final class ManualStoreException extends RuntimeException {
        ManualStoreException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    public boolean enabled() {
        return props.enabled();
    }

    public Status status() {
        if (!props.enabled()) {
            return new Status(false, null, null, null, List.of(), List.of(), Map.of(), null, null, null);
        }
        return new Status(true, props.topic(), props.policy(), props.period().toMillis(), views(records.published()),
                views(records.computed()), Map.copyOf(manual.byHost()), lastCycleAtNs, metrics.lastError(),
                metrics.lastErrorAtNs());
    }

    /** One period: compute every host's budget and publish it. Never throws. */
    public synchronized List<Outcome> runCycle() {
        metrics.cycle();
        long now = nowNs();
        lastCycleAtNs = now;
        restoreManual();
        List<PowerBudget> budgets = new ArrayList<>();
        Map<String, PowerBudgetService.Bounds> bounds = configuredBounds();
        try {
            List<HostPower> hosts = service.liveHosts(bounds, defaultBounds());
            hosts = hosts.stream().filter(h -> !manual.has(h.host())).toList();
            if (!hosts.isEmpty()) {
                PowerBudgetService.Computation c = service.compute(new PowerRequest(props.policy(), props.slaMs(),
                        props.entryPoint(), props.level(), props.namespace(), props.proportionalWattsPerCore(), hosts,
                        null));
                Map<String, HostPower> byHost = new HashMap<>();
                hosts.forEach(h -> byHost.put(h.host(), h));
                PowerBudgetPolicy policy = PowerBudgetPolicy.valueOf(c.policy().toUpperCase(Locale.ROOT));
                for (Budget b : c.budgets()) {
                    HostPower h = byHost.get(b.host());
                    budgets.add(records.next(b.host(), policy, now, b.budgetW(), h.minW(), h.maxW(), b.reason()));
                }
            }
        } catch (RuntimeException e) {
            log.debug("power budgets: computing failed", e);
            metrics.fail("compute", "computing budgets failed: " + e.getMessage(), null);
        }
        manual.byHost().forEach((host, m) -> {
            PowerBudgetService.Bounds b = bounds.getOrDefault(host, defaultBounds());
            budgets.add(records.next(host, PowerBudgetPolicy.MANUAL, now, m.watts(), b.minW(), b.maxW(),
                    ManualBudgets.reason(m)));
        });
        return publish(budgets);
    }

    /** Sets (and publishes at once) a MANUAL budget; it is renewed every period until cleared. */
    public synchronized Outcome setManual(String host, double watts, String reason) {
        PowerBudgetService.Bounds b = configuredBounds().getOrDefault(host, defaultBounds());
        if (b == null) {
            throw new IllegalArgumentException("host " + host + " has no configured bounds "
                    + "(wattgraph.power.budgets.hosts[" + host + "] or the defaults)");
        }
        if (!(watts >= b.minW() && watts <= b.maxW())) {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "%s W is outside the host's bounds [%s, %s] W",
                    watts, b.minW(), b.maxW()));
        }
        restoreManual();
        long now = nowNs();
        Manual m;
        try {
            m = manual.set(host, watts, reason, now);
        } catch (RuntimeException e) {
            throw new ManualStoreException("the MANUAL budget was not set: storing it in Neo4j failed: "
                    + e.getMessage(), e);
        }
        return publish(List.of(records.next(host, PowerBudgetPolicy.MANUAL, now, watts, b.minW(), b.maxW(),
                ManualBudgets.reason(m)))).get(0);
    }

    /** Ends a MANUAL budget: the host's next budget is the policy's again. */
    public synchronized boolean clearManual(String host) {
        restoreManual();
        try {
            return manual.clear(host);
        } catch (RuntimeException e) {
            throw new ManualStoreException("the MANUAL budget was not cleared: deleting it from Neo4j failed: "
                    + e.getMessage(), e);
        }
    }

    /** Reads back the MANUAL budgets stored before a restart, once Neo4j answers; budgets set since win. */
    private void restoreManual() {
        if (!props.enabled()) {
            return;
        }
        manual.restore(e -> metrics.fail("compute",
                "reading the stored MANUAL budgets from Neo4j failed (retried next cycle): " + e.getMessage(), null));
    }

    private List<Outcome> publish(List<PowerBudget> budgets) {
        List<Outcome> outcomes = new ArrayList<>();
        List<PowerBudget> acknowledged = new ArrayList<>();
        for (BudgetSender.Sent s : sender.send(budgets)) {
            outcomes.add(new Outcome(BudgetView.of(s.budget()), s.published(), s.error()));
            if (s.published()) {
                acknowledged.add(s.budget());
            }
        }
        history.record(acknowledged, e -> metrics.fail("history", "writing the published budgets' history to "
                + "Neo4j failed (kept, written with the next budgets): " + e.getMessage(), null));
        return outcomes;
    }

    private static List<BudgetView> views(Collection<PowerBudget> budgets) {
        return budgets.stream().map(BudgetView::of).toList();
    }

    private Map<String, PowerBudgetService.Bounds> configuredBounds() {
        Map<String, PowerBudgetService.Bounds> out = new TreeMap<>();
        props.hosts().forEach((id, b) -> out.put(id, new PowerBudgetService.Bounds(b.minWatts(), b.maxWatts(),
                b.idleWatts())));
        return out;
    }

    private PowerBudgetService.Bounds defaultBounds() {
        return props.defaultMinWatts() == null ? null
                : new PowerBudgetService.Bounds(props.defaultMinWatts(), props.defaultMaxWatts(), null);
    }

    static long nowNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    // Lifecycle: the loop starts with the application (after the web server) and stops before it.

    @Override
    public void start() {
        synchronized (stateLock) {
            if (!props.enabled() || executor != null) {
                return;
            }
            stopped = false;
            executor = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "wattgraph-power-budgets");
                t.setDaemon(true);
                return t;
            });
            executor.scheduleAtFixedRate(this::safeCycle, 0, props.period().toMillis(), TimeUnit.MILLISECONDS);
        }
        log.info("power budgets: {} every {} to {} at {}", props.policy(), props.period(), props.topic(),
                props.bootstrapServers());
    }

    private void safeCycle() {
        try {
            runCycle();
        } catch (RuntimeException | LinkageError e) { // an escaping exception would silently end the schedule
            metrics.fail("compute", "unexpected failure in the budget loop: " + e, e);
        }
    }

    /**
     * Stops the loop without waiting for Kafka: the producer is closed at once (a budget still unsent is
     * dropped; it would be stale soon anyway, and the next instance publishes fresh ones with higher sequences).
     */
    @Override
    public void stop() {
        ScheduledExecutorService ex;
        synchronized (stateLock) {
            ex = executor;
            executor = null;
            stopped = true;
        }
        if (ex != null) {
            ex.shutdownNow();
        }
        sender.abort(); // aborts a flush the cycle may be waiting in
        if (ex != null) {
            try {
                ex.awaitTermination(props.kafkaTimeout().toMillis() * 3, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public boolean isRunning() {
        synchronized (stateLock) {
            return executor != null;
        }
    }
}
