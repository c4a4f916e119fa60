package io.wattgraph.graph.power;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Test;

/**
 * The topic the budget loop creates when absent. On the chart's three brokers the loop ran before the
 * topic hook and created it with one replica (the old default), under min.insync.replicas 2: unset, the
 * replication factor is now the brokers' default.
 */
class BudgetTopicTest {

    @Test
    void unsetTheReplicationFactorIsTheBrokersDefault() {
        NewTopic t = BudgetSender.topicToCreate(BudgetPropertiesBinding.bind(Map.of()));
        assertThat(t.name()).isEqualTo("wattgraph.power-budgets");
        assertThat(t.numPartitions()).isEqualTo(1);
        assertThat(t.replicationFactor()).isEqualTo((short) -1); // "not set": the broker's default
        assertThat(t.configs()).containsEntry("cleanup.policy", "compact");
    }

    @Test
    void aReplicationFactorSetIsKeptAndAZeroOneIsRefused() {
        BudgetPublisherProperties p = BudgetPropertiesBinding.bind(Map.of("replication-factor", "3", "partitions", "2"));
        p.validate();
        NewTopic t = BudgetSender.topicToCreate(p);
        assertThat(t.replicationFactor()).isEqualTo((short) 3);
        assertThat(t.numPartitions()).isEqualTo(2);
        assertThatThrownBy(() -> BudgetPropertiesBinding.bind(Map.of("replication-factor", "0")).validate())
                .hasMessage("wattgraph.power.budgets: partitions and replication-factor must be at least 1, not 1 and 0");
    }
}
