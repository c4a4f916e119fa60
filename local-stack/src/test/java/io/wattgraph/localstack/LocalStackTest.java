package io.wattgraph.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;

/** Both servers start for real, serve a client, and keep their data across a restart. */
class LocalStackTest {

  @TempDir Path dir;

  @Test
  void kafkaBrokerServesAndKeepsRecordsAcrossRestart() throws Exception {
    try (KafkaBroker broker = KafkaBroker.start(dir, 0, 0)) {
      broker.createTopic("t", 1);
      broker.createTopic("t", 1); // idempotent
      try (var p = new KafkaProducer<String, String>(Map.of("bootstrap.servers", broker.bootstrapServers()),
          new StringSerializer(), new StringSerializer())) {
        p.send(new ProducerRecord<>("t", "k", "v1")).get();
      }
    }
    try (KafkaBroker broker = KafkaBroker.start(dir, 0, 0)) {
      assertTrue(broker.topics().contains("t"));
      try (var c = new KafkaConsumer<String, String>(Map.of("bootstrap.servers", broker.bootstrapServers(),
          "group.id", "g", "auto.offset.reset", "earliest"), new StringDeserializer(), new StringDeserializer())) {
        c.subscribe(List.of("t"));
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
          for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
            assertEquals("v1", r.value());
            return;
          }
        }
      }
    }
    throw new AssertionError("record written before the restart was not read after it");
  }

  @Test
  void neo4jAnswersOverItsDatabaseApi() {
    try (Neo4jServer neo4j = Neo4jServer.start(dir.resolve("neo"), 0)) {
      assertTrue(neo4j.boltUri().startsWith("bolt://127.0.0.1:"));
    }
  }
}
