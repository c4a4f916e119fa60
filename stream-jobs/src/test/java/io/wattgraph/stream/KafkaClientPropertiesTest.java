package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code --kafka-properties FILE}: what reaches the job's clients, and what is refused naming the key. */
class KafkaClientPropertiesTest {
  @TempDir Path dir;

  private JobConfig parse(String text) throws Exception {
    Path f = dir.resolve("kafka.properties");
    Files.writeString(f, text);
    return JobConfig.parse(new String[] {"--kafka-brokers", "k:9093", "--neo4j-uri", "bolt://n:7687",
        "--kafka-properties", f.toString()});
  }

  private String refusal(String text) {
    return assertThrows(IllegalArgumentException.class, () -> parse(text)).getMessage();
  }

  @Test
  void propertiesReachSourcesSinksAndAdmin() throws Exception {
    JobConfig c = parse("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        + "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        + "username=\"wattgraph-stream-jobs\" password=\"p\";\n"
        + "ssl.truststore.type=PEM\nssl.truststore.location=/etc/ca.pem\nfetch.min.bytes=10\n"
        + "transaction.timeout.ms=300000\npartition.discovery.interval.ms=5000\n");
    assertEquals("SASL_SSL", KafkaClientProperties.source(c).getProperty("security.protocol"));
    assertEquals("10", KafkaClientProperties.source(c).getProperty("fetch.min.bytes"));
    Map<String, String> producer = KafkaClientProperties.producer(c);
    assertEquals("SCRAM-SHA-512", producer.get("sasl.mechanism"));
    assertEquals("300000", producer.get("transaction.timeout.ms"), "overrides the sink's 600000");
    assertFalse(producer.containsKey("fetch.min.bytes"), "consumer keys stay out of the producers");
    Map<String, Object> admin = KafkaClientProperties.admin(c);
    assertEquals("k:9093", admin.get("bootstrap.servers"));
    assertEquals("/etc/ca.pem", admin.get("ssl.truststore.location"));
    assertFalse(admin.containsKey("partition.discovery.interval.ms"));
    assertTrue(JobConfig.parse(JobConfigTest.MIN).kafkaProperties.isEmpty());
    assertTrue(JobConfig.USAGE.contains("--kafka-properties FILE"));
  }

  @Test
  void keysTheJobReliesOnUnknownKeysAndBadValuesAreRefused() {
    String f = dir.resolve("kafka.properties").toString();
    assertEquals("--kafka-properties " + f + ": key 'transactional.id' cannot be set: the sinks' transactional ids "
        + "come from --group-id", refusal("transactional.id=x\n"));
    assertTrue(refusal("acks=1\n").contains("key 'acks' cannot be set: the exactly-once sinks need acks=all"));
    assertTrue(refusal("bootstrap.servers=evil:9092\n").contains("key 'bootstrap.servers' cannot be set"));
    assertTrue(refusal("group.id=g\n").contains("key 'group.id' cannot be set"));
    assertTrue(refusal("enable.idempotence=false\n").contains("key 'enable.idempotence' cannot be set"));
    assertEquals("--kafka-properties " + f + ": key 'sasl.mechansim' is not a Kafka client property",
        refusal("sasl.mechansim=SCRAM-SHA-512\n"));
    String bad = refusal("security.protocol=SASL_SSLX\n");
    assertTrue(bad.startsWith("--kafka-properties " + f + ": ") && bad.contains("security.protocol"), bad);
    String missing = assertThrows(IllegalArgumentException.class, () -> JobConfig.parse(new String[] {
        "--kafka-brokers", "k:1", "--neo4j-uri", "bolt://n:2", "--kafka-properties", "/nonexistent/k.properties"}))
        .getMessage();
    assertTrue(missing.startsWith("--kafka-properties /nonexistent/k.properties cannot be read"), missing);
  }
}
