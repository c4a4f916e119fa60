package io.wattgraph.stream.source;

import io.wattgraph.schema.RecordDecoder;
import io.wattgraph.schema.WattgraphSchemas;
import org.apache.avro.Schema;
import org.apache.avro.specific.SpecificRecord;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.LoggerFactory;

/**
 * The decode path of every agent topic: Kafka value (Avro single-object encoding, the schemas
 * module's bounded {@link RecordDecoder}) to a validated value with its {@link RecordIds} id, or one
 * {@link DeadLetter} naming why (a null value, undecodable bytes, an invalid record), counted in
 * the metric {@link #deadLetterMetric}.
 *
 * @param <A> the Avro record
 * @param <V> the value the job uses
 */
public abstract class AgentRecordDeserializer<A extends SpecificRecord, V>
    implements KafkaRecordDeserializationSchema<Decoded<V>> {
  private static final long serialVersionUID = 1L;

  private final String deadLetterMetric;
  private transient RecordDecoder<A> decoder;
  private transient Counter deadLetters;

  protected AgentRecordDeserializer(String deadLetterMetric) {
    this.deadLetterMetric = deadLetterMetric;
  }

  /** The reader schema (the record's current one). */
  protected abstract Schema schema();

  /** Why a decoded record cannot be used, or null when it can. */
  protected abstract String invalid(A record);

  /** A valid record as the job's value, with its record id. */
  protected abstract V toValue(A record, long recordId);

  @Override
  public void open(DeserializationSchema.InitializationContext context) {
    decoder = WattgraphSchemas.recordDecoder(schema());
    deadLetters = context.getMetricGroup().counter(deadLetterMetric);
  }

  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Decoded<V>> out) {
    if (decoder == null) {
      decoder = WattgraphSchemas.recordDecoder(schema());
    }
    String reason;
    V value = null;
    try {
      if (record.value() == null) {
        reason = "undecodable: null value";
      } else {
        A r = decoder.decode(record.value());
        reason = invalid(r);
        if (reason == null) {
          value = toValue(r, RecordIds.of(record.value()));
        }
      }
    } catch (Exception e) {
      reason = "undecodable: " + e;
    }
    if (value != null) {
      // Outside the try: an exception of a chained downstream operator must fail the task, not
      // turn a good record into a dead letter.
      out.collect(Decoded.ok(value));
      return;
    }
    if (deadLetters != null) {
      deadLetters.inc();
    }
    // Logged under the concrete deserializer's name, as before the shared path (dead letters are rare).
    LoggerFactory.getLogger(getClass()).warn("Dead letter {}-{}@{}: {}", record.topic(), record.partition(),
        record.offset(), reason);
    out.collect(Decoded.dead(DeadLetter.of(record, reason)));
  }
}
