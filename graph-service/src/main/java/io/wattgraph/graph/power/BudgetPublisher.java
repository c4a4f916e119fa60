package io.wattgraph.graph.power;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.wattgraph.schema.PowerBudget;
import io.wattgraph.schema.PowerBudgetPolicy;
import io.wattgraph.schema.WattgraphSchemas;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * The power-budget control loop ({@code wattgraph.power.budgets.enabled=true}): every period it derives the
 * hosts' power state from the live graph, computes their budgets with {@link PowerBudgetService} (the same
 * computation as {@code POST /api/v1/power/budgets}) and publishes one {@link PowerBudget} per host to the
 * compacted topic {@code wattgraph.power-budgets} (key = UTF-8 host id, value = Avro single-object encoding),
 * with an idempotent producer. A host with a MANUAL budget set by an administrator gets that budget, renewed
 * every period, until it is cleared.
 *
 * <p>Sequences: {@code max(computedAtNs, previous sequence of the host + 1)}, so they increase per host even
 * if the clock steps back. A record is sent once: when Kafka (or Neo4j) is down the cycle counts the failure
 * and drops that record, and the next cycle computes and sends a fresh one with a higher sequence. So Kafka
 * never receives a stale budget after a newer one, nor a sequence twice, and the loop never stops.
 * A cycle waits for Kafka at most about {@code kafka-timeout} (topic creation) plus twice it (delivery).
 */
@Component
public class BudgetPublisher implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(BudgetPublisher.class);

    static final String PUBLISHED = "wattgraph.power.budgets.published";
    static final String FAILURES = "wattgraph.power.budgets.failures";
    static final String CYCLES = "wattgraph.power.budgets.cycles";

    private final BudgetPublisherProperties props;
    private final PowerBudgetService service;
    private final MeterRegistry registry;
    private final BinaryMessageEncoder<PowerBudget> encoder = WattgraphSchemas.powerBudgetEncoder();
    private final ManualBudgetStore store;
    private volatile boolean manualRestored; // the stored MANUAL budgets have been read back (retried each cycle)

    // Read without the lock by status(), so GET never waits for a cycle that is waiting for Kafka.
    private final Map<String, PowerBudget> published = new ConcurrentSkipListMap<>();
    private final Map<String, PowerBudget> computed = new ConcurrentSkipListMap<>();
    private final Map<String, Manual> manual = new ConcurrentSkipListMap<>();
    private final Map<String, Long> lastSequence = new HashMap<>();

    private volatile Producer<String, byte[]> producer; // closed without the lock by stop()
    private boolean topicReady;
    private final Object stateLock = new Object(); // the executor's; never held while waiting for Kafka
    private ScheduledExecutorService executor;
    private volatile boolean stopped;
    private volatile String lastError;
    private volatile Long lastErrorAtNs;
    private volatile Long lastCycleAtNs;

    public BudgetPublisher(BudgetPublisherProperties props, PowerBudgetService service, MeterRegistry registry,
                           ManualBudgetStore store) {
        this.props = props;
        this.store = store;
        this.service = service;
        this.registry = registry;
        if (props.enabled()) {
            props.validate();
            Gauge.builder("wattgraph.power.budgets.hosts", published, Map::size)
                    .description("Hosts with a published power budget").register(registry);
            // Registered up front so that dashboards see zeros rather than missing series.
            for (String stage : List.of("compute", "topic", "send")) {
                counter(FAILURES, "stage", stage);
            }
            for (String policy : List.of("hyppo", "presto", "manual")) {
                counter(PUBLISHED, "policy", policy);
            }
            counter(CYCLES);
        }
    }

    /** A MANUAL budget set by an administrator. */
    public record Manual(double watts, String reason, long setAtNs) {
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

    public boolean enabled() {
        return props.enabled();
    }

    public Status status() {
        if (!props.enabled()) {
            return new Status(false, null, null, null, List.of(), List.of(), Map.of(), null, null, null);
        }
        return new Status(true, props.topic(), props.policy(), props.period().toMillis(),
                published.values().stream().map(BudgetView::of).toList(),
                computed.values().stream().map(BudgetView::of).toList(), Map.copyOf(manual), lastCycleAtNs, lastError,
                lastErrorAtNs);
    }

    /** One period: compute every host's budget and publish it. Never throws. */
    public synchronized List<Outcome> runCycle() {
        counter(CYCLES).increment();
        long now = nowNs();
        lastCycleAtNs = now;
        restoreManual();
        List<PowerBudget> records = new ArrayList<>();
        Map<String, PowerBudgetService.Bounds> bounds = configuredBounds();
        try {
            List<HostPower> hosts = service.liveHosts(bounds, defaultBounds());
            hosts = hosts.stream().filter(h -> !manual.containsKey(h.host())).toList();
            if (!hosts.isEmpty()) {
                PowerBudgetService.Computation c = service.compute(new PowerRequest(props.policy(), props.slaMs(),
                        props.entryPoint(), props.level(), props.namespace(), props.proportionalWattsPerCore(), hosts,
                        null));
                Map<String, HostPower> byHost = new HashMap<>();
                hosts.forEach(h -> byHost.put(h.host(), h));
                PowerBudgetPolicy policy = PowerBudgetPolicy.valueOf(c.policy().toUpperCase(Locale.ROOT));
                for (Budget b : c.budgets()) {
                    HostPower h = byHost.get(b.host());
                    records.add(record(b.host(), policy, now, b.budgetW(), h.minW(), h.maxW(), b.reason()));
                }
            }
        } catch (RuntimeException e) {
            log.debug("power budgets: computing failed", e);
            fail("compute", "computing budgets failed: " + e.getMessage(), null);
        }
        manual.forEach((host, m) -> {
            PowerBudgetService.Bounds b = bounds.getOrDefault(host, defaultBounds());
            records.add(record(host, PowerBudgetPolicy.MANUAL, now, m.watts(), b.minW(), b.maxW(), manualReason(m)));
        });
        return publish(records);
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
        Manual m = new Manual(watts, reason, now);
        try {
            store.save(host, m); // kept before it is applied, so a restart never forgets an acknowledged budget
        } catch (RuntimeException e) {
            throw new ManualStoreException("the MANUAL budget was not set: storing it in Neo4j failed: "
                    + e.getMessage(), e);
        }
        manual.put(host, m);
        return publish(List.of(record(host, PowerBudgetPolicy.MANUAL, now, watts, b.minW(), b.maxW(),
                manualReason(m)))).get(0);
    }

    /** Ends a MANUAL budget: the host's next budget is the policy's again. */
    public synchronized boolean clearManual(String host) {
        restoreManual();
        if (!manual.containsKey(host)) {
            return false;
        }
        try {
            store.delete(host);
        } catch (RuntimeException e) {
            throw new ManualStoreException("the MANUAL budget was not cleared: deleting it from Neo4j failed: "
                    + e.getMessage(), e);
        }
        return manual.remove(host) != null;
    }

    /** Neo4j could not store or delete a MANUAL budget (the in-memory state is left as it was). */
    public static final class ManualStoreException extends RuntimeException {
        ManualStoreException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Reads back the MANUAL budgets stored before a restart, once Neo4j answers; budgets set since win. */
    private void restoreManual() {
        if (manualRestored || !props.enabled()) {
            return;
        }
        try {
            Map<String, Manual> stored = store.all();
            stored.forEach(manual::putIfAbsent);
            manualRestored = true;
            if (!stored.isEmpty()) {
                log.info("power budgets: MANUAL budgets restored from Neo4j for {}", stored.keySet());
            }
        } catch (RuntimeException e) {
            fail("compute", "reading the stored MANUAL budgets from Neo4j failed (retried next cycle): "
                    + e.getMessage(), null);
        }
    }

    private static String manualReason(Manual m) {
        return m.reason() == null || m.reason().isBlank() ? "set by an administrator"
                : "set by an administrator: " + m.reason();
    }

    private PowerBudget record(String host, PowerBudgetPolicy policy, long now, double watts, double min, double max,
                               String reason) {
        long sequence = Math.max(now, lastSequence.getOrDefault(host, Long.MIN_VALUE) + 1);
        lastSequence.put(host, sequence);
        PowerBudget previous = published.get(host);
        PowerBudget r = PowerBudget.newBuilder()
                .setHostId(host)
                .setSequence(sequence)
                .setPolicy(policy)
                .setComputedAtNs(now)
                .setValidUntilNs(now + 3 * props.period().toNanos())
                .setBudgetWatts(watts)
                .setMinWatts(min)
                .setMaxWatts(max)
                .setPreviousWatts(previous == null ? null : previous.getBudgetWatts())
                .setReason(reason + change(previous, watts))
                .build();
        computed.put(host, r);
        return r;
    }

    /** The change from the budget last published for the host, for the reason. */
    private static String change(PowerBudget previous, double watts) {
        if (previous == null) {
            return "; first budget for the host";
        }
        double was = previous.getBudgetWatts();
        if (Double.compare(was, watts) == 0) {
            return String.format(Locale.ROOT, "; unchanged at %.2f W", watts);
        }
        return String.format(Locale.ROOT, "; %s from %.2f W", watts > was ? "up" : "down", was);
    }

    private List<Outcome> publish(List<PowerBudget> records) {
        List<Outcome> outcomes = new ArrayList<>();
        if (records.isEmpty()) {
            return outcomes;
        }
        try {
            ensureTopic();
        } catch (RuntimeException e) {
            fail("topic", "Kafka topic " + props.topic() + " not ready: " + e.getMessage(), null);
            records.forEach(r -> outcomes.add(new Outcome(BudgetView.of(r), false, lastError)));
            return outcomes;
        }
        Map<PowerBudget, Future<RecordMetadata>> sent = new LinkedHashMap<>();
        String sendError = null;
        for (PowerBudget r : records) {
            if (sendError != null) { // Kafka refused one already: do not wait max.block.ms per host
                outcomes.add(new Outcome(BudgetView.of(r), false, sendError));
                fail("send", sendError, null);
                continue;
            }
            try {
                Future<RecordMetadata> f = producer().send(new ProducerRecord<>(props.topic(), r.getHostId(), encode(r)));
                sent.put(r, f);
                if (f.isDone() && failed(f)) { // e.g. no metadata within max.block.ms: the next would wait as long
                    sendError = "Kafka refused an earlier budget of this cycle";
                }
            } catch (RuntimeException e) {
                sendError = "sending to Kafka failed: " + e.getMessage();
                fail("send", sendError, null);
                outcomes.add(new Outcome(BudgetView.of(r), false, sendError));
                closeProducer(); // a producer in a fatal state is replaced by a fresh one next time
            }
        }
        if (producer != null) {
            try {
                producer.flush(); // bounded by delivery.timeout.ms
            } catch (RuntimeException e) {
                log.warn("flushing the budget producer failed: {}", e.getMessage());
            }
        }
        for (var s : sent.entrySet()) {
            PowerBudget r = s.getKey();
            try {
                s.getValue().get(props.kafkaTimeout().toMillis() * 2, TimeUnit.MILLISECONDS);
                published.put(r.getHostId(), r);
                counter(PUBLISHED, "policy", r.getPolicy().name().toLowerCase(Locale.ROOT)).increment();
                outcomes.add(new Outcome(BudgetView.of(r), true, null));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("send", "interrupted while publishing", null);
                outcomes.add(new Outcome(BudgetView.of(r), false, "interrupted"));
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
                String msg = "publishing the budget of " + r.getHostId() + " failed: " + cause;
                fail("send", msg, null);
                outcomes.add(new Outcome(BudgetView.of(r), false, msg));
            }
        }
        return outcomes;
    }

    private static boolean failed(Future<RecordMetadata> f) {
        try {
            f.get(0, TimeUnit.MILLISECONDS);
            return false;
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            return e instanceof ExecutionException;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return true;
        }
    }

    private byte[] encode(PowerBudget r) {
        try {
            ByteBuffer buf = encoder.encode(r);
            byte[] out = new byte[buf.remaining()];
            buf.get(out);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void ensureTopic() {
        if (topicReady) {
            return;
        }
        int timeout = (int) props.kafkaTimeout().toMillis();
        Map<String, Object> config = new HashMap<>();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, props.bootstrapServers());
        config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, timeout);
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, timeout);
        config.put(AdminClientConfig.CLIENT_ID_CONFIG, "wattgraph-graph-service-budgets-admin");
        props.producer().forEach((k, v) -> {
            if (k.startsWith("security.") || k.startsWith("sasl.") || k.startsWith("ssl.")) {
                config.put(k, v);
            }
        });
        try (Admin admin = Admin.create(config)) {
            NewTopic topic = new NewTopic(props.topic(), props.partitions(), props.replicationFactor())
                    .configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
            try {
                // Listed first: with ACLs the producer's principal may write the topic but not create it, and
                // creating an existing topic then fails with an authorization error, not TopicExists.
                if (!admin.listTopics().names().get(timeout, TimeUnit.MILLISECONDS).contains(props.topic())) {
                    admin.createTopics(List.of(topic)).all().get(timeout, TimeUnit.MILLISECONDS);
                    log.info("created the compacted topic {}", props.topic());
                }
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw new IllegalStateException(String.valueOf(e.getCause()), e.getCause());
                }
            }
            topicReady = true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("no answer from " + props.bootstrapServers() + " in " + timeout + " ms");
        }
    }

    private Producer<String, byte[]> producer() {
        if (stopped) {
            throw new IllegalStateException("the budget publisher is stopped");
        }
        if (producer == null) {
            long timeout = props.kafkaTimeout().toMillis();
            Map<String, Object> config = new HashMap<>(props.producer());
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, props.bootstrapServers());
            config.put(ProducerConfig.CLIENT_ID_CONFIG, "wattgraph-graph-service-budgets");
            config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
            config.put(ProducerConfig.ACKS_CONFIG, "all");
            config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
            config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, timeout);
            config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout);
            config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) (2 * timeout));
            producer = new KafkaProducer<>(config, new StringSerializer(), new ByteArraySerializer());
        }
        return producer;
    }

    private void closeProducer() {
        if (producer != null) {
            try {
                producer.close(Duration.ZERO);
            } catch (RuntimeException e) {
                log.debug("closing the budget producer: {}", e.getMessage());
            }
            producer = null;
        }
    }

    private void fail(String stage, String message, Throwable e) {
        if (stopped) { // interrupted by stop(): not a failure of the loop
            log.debug("power budgets, while stopping: {}", message);
            return;
        }
        lastError = message;
        lastErrorAtNs = nowNs();
        counter(FAILURES, "stage", stage).increment();
        if (e != null) {
            log.warn("power budgets: {}", message, e);
        } else {
            log.warn("power budgets: {}", message);
        }
    }

    private Counter counter(String name, String... tags) {
        String description = switch (name) {
            case PUBLISHED -> "Power budgets published to Kafka, by policy";
            case FAILURES -> "Failures of the power-budget loop, by stage (compute, topic, send)";
            default -> "Cycles of the power-budget loop";
        };
        return Counter.builder(name).description(description).tags(tags).register(registry);
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
            fail("compute", "unexpected failure in the budget loop: " + e, e);
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
        Producer<String, byte[]> p = producer;
        if (p != null) {
            try {
                p.close(Duration.ZERO); // aborts a flush the cycle may be waiting in
            } catch (RuntimeException e) {
                log.debug("closing the budget producer: {}", e.getMessage());
            }
        }
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
