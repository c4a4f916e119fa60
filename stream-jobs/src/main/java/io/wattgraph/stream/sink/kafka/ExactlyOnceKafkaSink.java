package io.wattgraph.stream.sink.kafka;

import io.wattgraph.stream.JobConfig;
import io.wattgraph.stream.KafkaClientProperties;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.KafkaSinkBuilder;
import org.apache.kafka.clients.producer.ProducerConfig;

/** The job's Kafka outputs: transactional, visible to read_committed consumers with each checkpoint. */
public final class ExactlyOnceKafkaSink {
  private ExactlyOnceKafkaSink() {}

  /** {@code name} makes the transactional id prefix ({@code groupId-name}) unique per sink. */
  public static <T> KafkaSink<T> of(JobConfig config, KafkaRecordSerializationSchema<T> serializer, String name) {
    KafkaSinkBuilder<T> sink = KafkaSink.<T>builder()
        .setBootstrapServers(config.kafkaBrokers)
        .setRecordSerializer(serializer)
        .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .setTransactionalIdPrefix(config.groupId + "-" + name)
        // Must not exceed the broker's transaction.max.timeout.ms (15 min by default).
        .setProperty(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "600000");
    // After the job's own: an operator's transaction.timeout.ms (a broker with a lower maximum) wins.
    KafkaClientProperties.producer(config).forEach(sink::setProperty);
    return sink.build();
  }
}
