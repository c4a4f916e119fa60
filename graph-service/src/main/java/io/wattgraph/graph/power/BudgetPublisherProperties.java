package io.wattgraph.graph.power;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The periodic budget publisher ({@code wattgraph.power.budgets.*}, off by default).
 *
 * @param enabled start the loop (needs Kafka at {@code bootstrapServers})
 * @param period how often budgets are recomputed and published; a budget is valid for 3 periods
 * @param policy hyppo or presto
 * @param slaMs PRESTO's latency target L̄, ms (required for presto)
 * @param entryPoint PRESTO's entry pod (default: the pod receiving most external requests)
 * @param level PRESTO's aggregation level (default pod)
 * @param namespace only this namespace's part of the graph (default: all)
 * @param proportionalWattsPerCore HyPPO's P, W per core (default 10)
 * @param defaultMinWatts lower bound of a host found in the graph without its own entry in {@code hosts}
 * @param defaultMaxWatts upper bound likewise; without both defaults only the hosts listed are budgeted
 * @param hosts per-host bounds (and optional idle power), keyed by host id:
 *     {@code wattgraph.power.budgets.hosts[host-a].min-watts=40}
 * @param bootstrapServers Kafka bootstrap servers
 * @param topic the compacted topic the budgets go to (created when absent)
 * @param partitions partitions when the topic is created
 * @param replicationFactor replication factor when the topic is created (default: the brokers'
 *     {@code default.replication.factor}, so a cluster's durability setting applies to the budgets too)
 * @param kafkaTimeout bound on every Kafka wait (metadata, request, topic creation); delivery gives up after
 *     twice this, so a cycle never waits for Kafka much longer than that
 * @param historyEntries published budgets kept per host in Neo4j for {@code GET /budgets/history}, the newest
 *     (1..8640; 360 = 3 h at the default period, beyond the stream job's default 1 h of host windows)
 * @param producer Kafka producer properties of the budget producer, e.g. TLS and SASL:
 *     {@code wattgraph.power.budgets.producer.security.protocol=SASL_SSL}; the {@code security.*},
 *     {@code sasl.*} and {@code ssl.*} ones also go to the admin client that creates the topic. Keys the
 *     publisher sets ({@link #RESERVED}), unknown keys and bad values fail start-up naming the key.
 */
@ConfigurationProperties("wattgraph.power.budgets")
public record BudgetPublisherProperties(
        @DefaultValue("false") boolean enabled,
        @DefaultValue("30s") Duration period,
        @DefaultValue("hyppo") String policy,
        Double slaMs,
        String entryPoint,
        String level,
        String namespace,
        Double proportionalWattsPerCore,
        Double defaultMinWatts,
        Double defaultMaxWatts,
        @DefaultValue Map<String, HostBounds> hosts,
        @DefaultValue("127.0.0.1:9092") String bootstrapServers,
        @DefaultValue("wattgraph.power-budgets") String topic,
        @DefaultValue("1") int partitions,
        Short replicationFactor,
        @DefaultValue("5s") Duration kafkaTimeout,
        @DefaultValue("360") int historyEntries,
        @DefaultValue Map<String, String> producer) {

    /** Producer keys the publisher sets itself, with why. */
    public static final Map<String, String> RESERVED = Map.ofEntries(
            Map.entry("bootstrap.servers", "use wattgraph.power.budgets.bootstrap-servers"),
            Map.entry("client.id", "the publisher names its producer"),
            Map.entry("enable.idempotence", "the producer is idempotent (no duplicate or reordered budget)"),
            Map.entry("acks", "a budget counts as published once all in-sync replicas have it (acks=all)"),
            Map.entry("transactional.id", "the producer is not transactional"),
            Map.entry("linger.ms", "a cycle's budgets are sent at once"),
            Map.entry("max.block.ms", "bounded by wattgraph.power.budgets.kafka-timeout"),
            Map.entry("request.timeout.ms", "bounded by wattgraph.power.budgets.kafka-timeout"),
            Map.entry("delivery.timeout.ms", "bounded by wattgraph.power.budgets.kafka-timeout"),
            Map.entry("key.serializer", "keys are UTF-8 host ids"),
            Map.entry("value.serializer", "values are Avro single-object bytes"));

    /** A host's bounds, W; {@code idleWatts} overrides HyPPO's idle term derived from the graph. */
    public record HostBounds(double minWatts, double maxWatts, Double idleWatts) {
    }

    /** Checks the configuration once at start; a wrong value fails start-up rather than every cycle. */
    public void validate() {
        if (period.isNegative() || period.isZero()) {
            throw new IllegalStateException("wattgraph.power.budgets.period must be positive");
        }
        if (!policy.equals("hyppo") && !policy.equals("presto")) {
            throw new IllegalStateException("wattgraph.power.budgets.policy must be hyppo or presto, not " + policy);
        }
        if (policy.equals("presto") && (slaMs == null || !(slaMs > 0))) {
            throw new IllegalStateException("wattgraph.power.budgets.sla-ms must be a positive latency for presto");
        }
        if ((defaultMinWatts == null) != (defaultMaxWatts == null)) {
            throw new IllegalStateException("set both wattgraph.power.budgets.default-min-watts and default-max-watts");
        }
        if (defaultMinWatts != null && !(defaultMinWatts >= 0 && defaultMaxWatts >= defaultMinWatts)) {
            throw new IllegalStateException("wattgraph.power.budgets: 0 <= default-min-watts <= default-max-watts");
        }
        hosts.forEach((id, b) -> {
            if (!(b.minWatts() >= 0 && b.maxWatts() >= b.minWatts())) {
                throw new IllegalStateException("wattgraph.power.budgets.hosts[" + id + "]: 0 <= min-watts <= max-watts");
            }
        });
        if (historyEntries < 1 || historyEntries > BudgetHistoryStore.MAX_ENTRIES) {
            throw new IllegalStateException("wattgraph.power.budgets.history-entries must be between 1 and "
                    + BudgetHistoryStore.MAX_ENTRIES + ", not " + historyEntries);
        }
        if (partitions < 1 || (replicationFactor != null && replicationFactor < 1)) {
            throw new IllegalStateException("wattgraph.power.budgets: partitions and replication-factor must be "
                    + "at least 1, not " + partitions + " and " + replicationFactor);
        }
        validateProducer();
        if (hosts.isEmpty() && defaultMinWatts == null) {
            throw new IllegalStateException("wattgraph.power.budgets: configure hosts[<id>].min-watts/max-watts "
                    + "or default-min-watts/default-max-watts, else no host can be budgeted");
        }
    }

    /** The producer map: no key the publisher sets, only producer keys, values the client takes. */
    void validateProducer() {
        producer.forEach((k, v) -> {
            String why = RESERVED.get(k);
            if (why != null) {
                throw new IllegalStateException("wattgraph.power.budgets.producer." + k + " cannot be set: " + why);
            }
            if (!ProducerConfig.configNames().contains(k)) {
                throw new IllegalStateException("wattgraph.power.budgets.producer." + k
                        + " is not a Kafka producer property");
            }
        });
        Map<String, Object> config = new HashMap<>(producer);
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        try {
            new ProducerConfig(config);
        } catch (ConfigException e) { // Kafka's message names the key and hides password values
            throw new IllegalStateException("wattgraph.power.budgets.producer: " + e.getMessage(), e);
        }
    }
}
