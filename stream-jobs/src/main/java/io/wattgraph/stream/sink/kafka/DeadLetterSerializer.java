package io.wattgraph.stream.sink.kafka;

import io.wattgraph.stream.source.DeadLetter;
import java.nio.charset.StandardCharsets;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * A dead letter as a Kafka record of the dead-letter topic: the original key and value bytes
 * unchanged, the rest in headers (UTF-8 text), like Kafka Connect's DLQ:
 * {@code wattgraph.dlq.reason}, {@code wattgraph.dlq.topic}, {@code wattgraph.dlq.partition},
 * {@code wattgraph.dlq.offset}. The record timestamp is the original one.
 */
public class DeadLetterSerializer implements KafkaRecordSerializationSchema<DeadLetter> {
  private static final long serialVersionUID = 1L;

  public static final String REASON = "wattgraph.dlq.reason";
  public static final String TOPIC = "wattgraph.dlq.topic";
  public static final String PARTITION = "wattgraph.dlq.partition";
  public static final String OFFSET = "wattgraph.dlq.offset";

  private final String topic;

  public DeadLetterSerializer(String topic) {
    this.topic = topic;
  }

  @Override
  public ProducerRecord<byte[], byte[]> serialize(DeadLetter d, KafkaSinkContext context, Long timestamp) {
    RecordHeaders headers = new RecordHeaders();
    headers.add(REASON, utf8(d.reason));
    headers.add(TOPIC, utf8(d.topic));
    headers.add(PARTITION, utf8(String.valueOf(d.partition)));
    headers.add(OFFSET, utf8(String.valueOf(d.offset)));
    Long ts = d.timestamp >= 0 ? d.timestamp : null;
    return new ProducerRecord<>(topic, null, ts, d.key, d.value, headers);
  }

  private static byte[] utf8(String s) {
    return (s == null ? "" : s).getBytes(StandardCharsets.UTF_8);
  }
}
