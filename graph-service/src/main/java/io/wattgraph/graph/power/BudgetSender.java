package io.wattgraph.graph.power;

import io.wattgraph.schema.PowerBudget;
import io.wattgraph.schema.WattgraphSchemas;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
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

/**
 * Sends budget records to the compacted topic (key = UTF-8 host id, value = Avro single-object encoding): creates
 * the topic once, sends with one idempotent producer (acks=all) and waits for each acknowledgement. Every Kafka wait
 * is bounded by {@code kafka-timeout} (topic creation) or twice it (delivery). A record is sent once: one that fails
 * is reported, not retried (the loop's next cycle sends a fresh one with a higher sequence).
 */
final class BudgetSender {

    private static final Logger log = LoggerFactory.getLogger(BudgetSender.class);

    /** What became of one record. */
    record Sent(PowerBudget budget, boolean published, String error) {
    }

    private final BudgetPublisherProperties props;
    private final BudgetLoopMetrics metrics;
    private final BooleanSupplier stopped;
    private final Consumer<PowerBudget> acknowledged;
    private final BinaryMessageEncoder<PowerBudget> encoder = WattgraphSchemas.powerBudgetEncoder();
    private volatile Producer<String, byte[]> producer; // closed without the loop's lock by abort()
    private boolean topicReady;

    BudgetSender(BudgetPublisherProperties props, BudgetLoopMetrics metrics, BooleanSupplier stopped,
                 Consumer<PowerBudget> acknowledged) {
        this.props = props;
        this.metrics = metrics;
        this.stopped = stopped;
        this.acknowledged = acknowledged;
    }

    List<Sent> send(List<PowerBudget> records) {
        List<Sent> outcomes = new ArrayList<>();
        if (records.isEmpty()) {
            return outcomes;
        }
        try {
            ensureTopic();
        } catch (RuntimeException e) {
            metrics.fail("topic", "Kafka topic " + props.topic() + " not ready: " + e.getMessage(), null);
            records.forEach(r -> outcomes.add(new Sent(r, false, metrics.lastError())));
            return outcomes;
        }
        Map<PowerBudget, Future<RecordMetadata>> sent = new LinkedHashMap<>();
        String sendError = null;
        for (PowerBudget r : records) {
            if (sendError != null) { // Kafka refused one already: do not wait max.block.ms per host
                outcomes.add(new Sent(r, false, sendError));
                metrics.fail("send", sendError, null);
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
                metrics.fail("send", sendError, null);
                outcomes.add(new Sent(r, false, sendError));
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
                acknowledged.accept(r);
                metrics.published(r.getPolicy());
                outcomes.add(new Sent(r, true, null));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                metrics.fail("send", "interrupted while publishing", null);
                outcomes.add(new Sent(r, false, "interrupted"));
            } catch (ExecutionException | TimeoutException e) {
                Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
                String msg = "publishing the budget of " + r.getHostId() + " failed: " + cause;
                metrics.fail("send", msg, null);
                outcomes.add(new Sent(r, false, msg));
            }
        }
        return outcomes;
    }

    /** Closes the producer at once, from any thread: a send or flush waiting in it is aborted. */
    void abort() {
        Producer<String, byte[]> p = producer;
        if (p != null) {
            try {
                p.close(Duration.ZERO);
            } catch (RuntimeException e) {
                log.debug("closing the budget producer: {}", e.getMessage());
            }
        }
    }

    private static boolean failed(Future<RecordMetadata> f) {
        try {
            f.get(0, TimeUnit.MILLISECONDS);
            return false;
        } catch (ExecutionException | TimeoutException e) {
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

    /** The compacted topic; without a replication factor set, the brokers' default (not 1). */
    static NewTopic topicToCreate(BudgetPublisherProperties props) {
        return new NewTopic(props.topic(), Optional.of(props.partitions()), Optional.ofNullable(props.replicationFactor()))
                .configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
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
            NewTopic topic = topicToCreate(props);
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
        } catch (TimeoutException e) {
            throw new IllegalStateException("no answer from " + props.bootstrapServers() + " in " + timeout + " ms");
        }
    }

    private Producer<String, byte[]> producer() {
        if (stopped.getAsBoolean()) {
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
            abort();
            producer = null;
        }
    }
}
