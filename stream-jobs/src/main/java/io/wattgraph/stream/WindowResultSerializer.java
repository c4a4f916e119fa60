package io.wattgraph.stream;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A window result as a Kafka record: key UTF-8 {@link #key} (every window and revision of one entity
 * or edge on one partition, in order), value the Avro record {@link #toRecord} in single-object
 * encoding, timestamp the window end (ms). The encoder is made on first use (not serialisable).
 */
abstract class WindowResultSerializer<R, T> implements KafkaRecordSerializationSchema<R> {
  private static final long serialVersionUID = 1L;

  private final String topic;
  private transient BinaryMessageEncoder<T> encoder;

  WindowResultSerializer(String topic) {
    this.topic = topic;
  }

  abstract BinaryMessageEncoder<T> newEncoder();

  abstract T toRecord(R r);

  abstract String key(R r);

  abstract long windowEndNs(R r);

  @Override
  public ProducerRecord<byte[], byte[]> serialize(R r, KafkaSinkContext context, Long timestamp) {
    if (encoder == null) {
      encoder = newEncoder();
    }
    try {
      ByteBuffer b = encoder.encode(toRecord(r));
      byte[] value = new byte[b.remaining()];
      b.get(value);
      return new ProducerRecord<>(topic, null, windowEndNs(r) / 1_000_000L,
          key(r).getBytes(StandardCharsets.UTF_8), value);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
