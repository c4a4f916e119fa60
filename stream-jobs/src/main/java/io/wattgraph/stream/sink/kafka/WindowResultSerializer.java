package io.wattgraph.stream.sink.kafka;

import io.wattgraph.stream.TransactionTotals;
import io.wattgraph.stream.window.LatencyStats;
import io.wattgraph.stream.window.MetricsRow;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.avro.specific.SpecificRecordBase;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.util.function.SerializableFunction;
import org.apache.flink.util.function.SerializableSupplier;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A window result as a Kafka record: key UTF-8 {@code key} (every window and revision of one entity
 * or edge on one partition, in order), value the Avro record {@code toRecord} in single-object
 * encoding, timestamp the window end (ms). The encoder is made on first use (not serialisable); the
 * functions a subclass passes are serialisable, as the sink is shipped to the task managers.
 */
abstract class WindowResultSerializer<R, T> implements KafkaRecordSerializationSchema<R> {
  private static final long serialVersionUID = 1L;

  private final String topic;
  private final SerializableSupplier<BinaryMessageEncoder<T>> newEncoder;
  private final SerializableFunction<R, T> toRecord;
  private final SerializableFunction<R, String> key;
  private final SerializableFunction<R, Long> windowEndNs;
  private transient BinaryMessageEncoder<T> encoder;

  WindowResultSerializer(String topic, SerializableSupplier<BinaryMessageEncoder<T>> newEncoder,
      SerializableFunction<R, T> toRecord, SerializableFunction<R, String> key,
      SerializableFunction<R, Long> windowEndNs) {
    this.topic = topic;
    this.newEncoder = newEncoder;
    this.toRecord = toRecord;
    this.key = key;
    this.windowEndNs = windowEndNs;
  }

  @Override
  public ProducerRecord<byte[], byte[]> serialize(R r, KafkaSinkContext context, Long timestamp) {
    if (encoder == null) {
      encoder = newEncoder.get();
    }
    try {
      ByteBuffer b = encoder.encode(toRecord.apply(r));
      byte[] value = new byte[b.remaining()];
      b.get(value);
      return new ProducerRecord<>(topic, null, windowEndNs.apply(r) / 1_000_000L,
          key.apply(r).getBytes(StandardCharsets.UTF_8), value);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Sets the latency histograms and their percentiles, named alike in every window schema, on a
   * built record (each of these fields has a default, so the builder may leave them out).
   */
  static <T extends SpecificRecordBase> T putLatency(T record, TransactionTotals t, LatencyStats clientRtt,
      LatencyStats serverTime) {
    record.put("latencySubBucketBits", t.subBucketBits);
    record.put("clientRttMeanNs", clientRtt.meanNs);
    record.put("clientRttP50Ns", clientRtt.p50Ns);
    record.put("clientRttP75Ns", clientRtt.p75Ns);
    record.put("clientRttP90Ns", clientRtt.p90Ns);
    record.put("clientRttP99Ns", clientRtt.p99Ns);
    record.put("serverTimeMeanNs", serverTime.meanNs);
    record.put("serverTimeP50Ns", serverTime.p50Ns);
    record.put("serverTimeP75Ns", serverTime.p75Ns);
    record.put("serverTimeP90Ns", serverTime.p90Ns);
    record.put("serverTimeP99Ns", serverTime.p99Ns);
    record.put("clientRttBuckets", ints(t.clientRtt.buckets));
    record.put("clientRttCounts", longs(t.clientRtt.counts));
    record.put("serverTimeBuckets", ints(t.serverTime.buckets));
    record.put("serverTimeCounts", longs(t.serverTime.counts));
    return record;
  }

  /**
   * The v2 transaction fields of an entity's window record (WindowMetrics, NamespaceMetrics): the
   * totals, rates and latencies of {@code r.tx}; the record unchanged when the window had none.
   */
  static <T extends SpecificRecordBase> T putTransactions(T record, MetricsRow r) {
    TransactionTotals t = r.tx;
    if (t == null) {
      return record;
    }
    double windowSeconds = (r.windowEndNs - r.windowStartNs) / 1e9;
    record.put("clientTransactions", t.clientTransactions);
    record.put("serverTransactions", t.serverTransactions);
    record.put("clientRequestRate", t.clientTransactions / windowSeconds);
    record.put("serverRequestRate", t.serverTransactions / windowSeconds);
    record.put("clientRequestBytes", t.clientRequestBytes);
    record.put("clientResponseBytes", t.clientResponseBytes);
    record.put("serverRequestBytes", t.serverRequestBytes);
    record.put("serverResponseBytes", t.serverResponseBytes);
    return putLatency(record, t, r.clientRtt, r.serverTime);
  }

  static List<Integer> ints(int[] a) {
    return Arrays.stream(a).boxed().toList();
  }

  static List<Long> longs(long[] a) {
    return Arrays.stream(a).boxed().toList();
  }
}
