package io.wattgraph.graph.power;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code wattgraph.power.budgets.producer.*}: Kafka's dotted keys bind as one map key each (so TLS and
 * SASL settings reach the budget producer), and keys the publisher sets, unknown keys and bad values fail
 * start-up naming the key instead of being overridden or ignored.
 */
class BudgetProducerPropertiesTest {

    private static BudgetPublisherProperties bind(Map<String, String> producer) {
        Map<String, String> keys = new HashMap<>();
        producer.forEach((k, v) -> keys.put("producer." + k, v));
        return BudgetPropertiesBinding.bind(keys);
    }

    @Test
    void dottedKafkaKeysBindAndValidate() {
        BudgetPublisherProperties p = bind(Map.of("security.protocol", "SASL_SSL",
                "sasl.mechanism", "SCRAM-SHA-512",
                "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                        + "username=\"wattgraph-graph-service\" password=\"p\";",
                "ssl.truststore.type", "PEM", "ssl.truststore.location", "/etc/wattgraph/ca.pem"));
        p.validate();
        assertThat(p.producer()).containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("ssl.truststore.location", "/etc/wattgraph/ca.pem").hasSize(5);
    }

    @Test
    void keysThePublisherSetsUnknownKeysAndBadValuesAreRefused() {
        assertThatThrownBy(() -> bind(Map.of("acks", "1")).validate())
                .hasMessage("wattgraph.power.budgets.producer.acks cannot be set: a budget counts as published "
                        + "once all in-sync replicas have it (acks=all)");
        assertThatThrownBy(() -> bind(Map.of("bootstrap.servers", "evil:9092")).validate())
                .hasMessageContaining("producer.bootstrap.servers cannot be set: use wattgraph.power.budgets.bootstrap-servers");
        assertThatThrownBy(() -> bind(Map.of("enable.idempotence", "false")).validate())
                .hasMessageContaining("producer.enable.idempotence cannot be set");
        assertThatThrownBy(() -> bind(Map.of("sasl.mechansim", "SCRAM-SHA-512")).validate())
                .hasMessage("wattgraph.power.budgets.producer.sasl.mechansim is not a Kafka producer property");
        assertThatThrownBy(() -> bind(Map.of("security.protocol", "SASL_SSLX")).validate())
                .hasMessageStartingWith("wattgraph.power.budgets.producer: ")
                .hasMessageContaining("security.protocol");
    }
}
