package io.wattgraph.stream;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The operator's Kafka client properties ({@code --kafka-properties FILE}, a Java properties file of
 * Kafka's own client keys, e.g. {@code security.protocol=SASL_SSL}, {@code sasl.mechanism=SCRAM-SHA-512},
 * {@code sasl.jaas.config=...}, {@code ssl.truststore.location=...}), applied to every Kafka client of
 * the job: its sources, its exactly-once sinks (their transactional producers) and its admin client.
 * Keys the job sets itself for its guarantees are refused, an unknown key or a bad value is refused
 * at start, naming the file and the key (Kafka's own messages hide password values).
 */
public final class KafkaClientProperties {
  private KafkaClientProperties() {}

  /** Keys the job sets, with why an operator may not. */
  static final Map<String, String> RESERVED = Map.ofEntries(
      Map.entry("bootstrap.servers", "the brokers come from --kafka-brokers"),
      Map.entry("group.id", "the groups come from --group-id"),
      Map.entry("transactional.id", "the sinks' transactional ids come from --group-id"),
      Map.entry("enable.idempotence", "the exactly-once sinks need the idempotent producer"),
      Map.entry("acks", "the exactly-once sinks need acks=all"),
      Map.entry("enable.auto.commit", "offsets are committed with each checkpoint"),
      Map.entry("auto.offset.reset", "the job starts from its group's offsets, else from the earliest"),
      Map.entry("key.serializer", "the job's records are bytes"),
      Map.entry("value.serializer", "the job's records are bytes"),
      Map.entry("key.deserializer", "the job's records are bytes"),
      Map.entry("value.deserializer", "the job's records are bytes"));

  /** Flink's own source options, passed with the client properties. */
  private static final Set<String> FLINK_SOURCE_KEYS = Set.of("client.id.prefix", "partition.discovery.interval.ms",
      "register.consumer.metrics", "commit.offsets.on.checkpoint");

  static TreeMap<String, String> load(String file) {
    String where = "--kafka-properties " + file;
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(Path.of(file))) {
      p.load(r);
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalArgumentException(where + " cannot be read: " + e.getMessage(), e);
    }
    TreeMap<String, String> out = new TreeMap<>();
    for (String k : p.stringPropertyNames()) {
      String why = RESERVED.get(k);
      if (why != null) {
        throw new IllegalArgumentException(where + ": key '" + k + "' cannot be set: " + why);
      }
      if (!FLINK_SOURCE_KEYS.contains(k) && !ConsumerConfig.configNames().contains(k)
          && !ProducerConfig.configNames().contains(k) && !AdminClientConfig.configNames().contains(k)) {
        throw new IllegalArgumentException(where + ": key '" + k + "' is not a Kafka client property");
      }
      out.put(k, p.getProperty(k).strip());
    }
    try {
      new ConsumerConfig(known(out, ConsumerConfig.configNames(), Map.of(
          ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
          ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class)));
      new ProducerConfig(known(out, ProducerConfig.configNames(), Map.of(
          ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
          ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class)));
    } catch (ConfigException e) {
      throw new IllegalArgumentException(where + ": " + e.getMessage(), e);
    }
    return out;
  }

  private static Map<String, Object> known(Map<String, String> props, Set<String> names, Map<String, Object> extra) {
    Map<String, Object> m = new HashMap<>(extra);
    m.put("bootstrap.servers", "127.0.0.1:9092");
    props.forEach((k, v) -> {
      if (names.contains(k)) {
        m.put(k, v);
      }
    });
    return m;
  }

  /** The brokers and the operator's properties, for an admin client. */
  static Map<String, Object> admin(JobConfig config) {
    Map<String, Object> m = new HashMap<>();
    config.kafkaProperties.forEach((k, v) -> {
      if (AdminClientConfig.configNames().contains(k)) {
        m.put(k, v);
      }
    });
    m.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, config.kafkaBrokers);
    return m;
  }

  /** The operator's properties, for a source (its consumers and its admin client). */
  static Properties source(JobConfig config) {
    Properties p = new Properties();
    p.putAll(config.kafkaProperties);
    return p;
  }

  /** The operator's producer properties, for a sink. */
  public static Map<String, String> producer(JobConfig config) {
    Map<String, String> m = new TreeMap<>(config.kafkaProperties);
    m.keySet().retainAll(ProducerConfig.configNames());
    return m;
  }
}
