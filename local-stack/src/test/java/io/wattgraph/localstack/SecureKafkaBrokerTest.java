package io.wattgraph.localstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.localstack.KafkaSecurity.Principal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SASL_SSL broker and its ACL table: each principal may write and read what its component does
 * and is refused the rest (another component's topic, a group or transactional id outside its prefix);
 * a wrong password is refused, a rotated one replaces the old; the client files hold the secrets with
 * mode 600.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecureKafkaBrokerTest {

  @TempDir static Path dir;
  private KafkaBroker broker;

  @BeforeAll
  void start() throws Exception {
    broker = KafkaBroker.startSecure(dir, 0, 0);
  }

  @AfterAll
  void stop() {
    broker.close();
  }

  private Map<String, Object> client(Principal p) {
    Map<String, Object> c = broker.clientConfig(p.user, broker.security().password(p));
    c.put("max.block.ms", 20_000);
    return c;
  }

  /** null when written, else the cause of the failure. */
  private Throwable write(Map<String, Object> config, String topic) {
    try (var p = new KafkaProducer<>(config, new StringSerializer(), new StringSerializer())) {
      p.send(new ProducerRecord<>(topic, "k", "v")).get();
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (org.apache.kafka.common.KafkaException e) {
      return e;
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  private void allowed(Principal p, String topic) {
    assertEquals(null, write(client(p), topic), p + " may write " + topic);
  }

  private void refused(Principal p, String topic) {
    assertInstanceOf(TopicAuthorizationException.class, write(client(p), topic), p + " must not write " + topic);
  }

  @Test
  void eachPrincipalWritesOnlyItsTopics() {
    WattgraphAcls.AGENT_TOPICS.forEach(t -> allowed(Principal.AGENT, t));
    allowed(Principal.GRAPH_SERVICE, WattgraphAcls.POWER_BUDGETS);
    allowed(Principal.SERVICE_MAPPER, WattgraphAcls.SERVICE_MAPPINGS);
    refused(Principal.AGENT, WattgraphAcls.POWER_BUDGETS);
    refused(Principal.AGENT, WattgraphAcls.SERVICE_MAPPINGS);
    refused(Principal.AGENT, "wattgraph.metrics");
    refused(Principal.STREAM_JOBS, WattgraphAcls.POWER_BUDGETS);
    refused(Principal.STREAM_JOBS, "wattgraph.connections");
    refused(Principal.GRAPH_SERVICE, "wattgraph.connections");
    refused(Principal.SERVICE_MAPPER, WattgraphAcls.POWER_BUDGETS);
  }

  @Test
  void theJobWritesTransactionallyUnderItsPrefixOnly() {
    Map<String, Object> ok = client(Principal.STREAM_JOBS);
    ok.put("transactional.id", WattgraphAcls.JOB_GROUP_PREFIX + "-dlq-0");
    try (var p = new KafkaProducer<>(ok, new StringSerializer(), new StringSerializer())) {
      p.initTransactions();
      p.beginTransaction();
      p.send(new ProducerRecord<>("wattgraph.dlq", "k", "v"));
      p.commitTransaction();
    }
    Map<String, Object> other = client(Principal.STREAM_JOBS);
    other.put("transactional.id", "someone-else-0");
    try (var p = new KafkaProducer<>(other, new StringSerializer(), new StringSerializer())) {
      assertThrows(TransactionalIdAuthorizationException.class, p::initTransactions);
    }
  }

  @Test
  void readersNeedTheirTopicAndGroup() {
    // The agent reads the budgets by assignment; its group may be looked up, not joined or committed to.
    assertTrue(read(Principal.AGENT, WattgraphAcls.POWER_BUDGETS, null) >= 0);
    assertInstanceOf(GroupAuthorizationException.class, assertThrows(RuntimeException.class,
        () -> read(Principal.AGENT, WattgraphAcls.POWER_BUDGETS, WattgraphAcls.AGENT_GROUP_PREFIX + "h-budgets")));
    assertInstanceOf(TopicAuthorizationException.class,
        assertThrows(RuntimeException.class, () -> read(Principal.AGENT, "wattgraph.metrics", null)));
    // The job commits offsets in groups under its prefix, and nowhere else.
    assertTrue(read(Principal.STREAM_JOBS, "wattgraph.connections", WattgraphAcls.JOB_GROUP_PREFIX + "-x") >= 0);
    // Its container windows read the agents' CgroupStats.
    assertTrue(read(Principal.STREAM_JOBS, "wattgraph.cgroups", WattgraphAcls.JOB_GROUP_PREFIX + "-cgroups") >= 0);
    assertInstanceOf(GroupAuthorizationException.class,
        assertThrows(RuntimeException.class, () -> read(Principal.STREAM_JOBS, "wattgraph.connections", "other")));
  }

  /** Records read from partition 0 (a group: offsets committed in it). */
  private int read(Principal p, String topic, String group) {
    Map<String, Object> c = client(p);
    c.put("auto.offset.reset", "earliest");
    c.put("default.api.timeout.ms", 20_000);
    if (group != null) {
      c.put("group.id", group);
    }
    try (var consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
      TopicPartition tp = new TopicPartition(topic, 0);
      consumer.assign(List.of(tp));
      int n = consumer.poll(Duration.ofSeconds(2)).count();
      if (group != null) {
        // An explicit offset: commitSync() with nothing consumed yet (a slow first fetch) sends
        // no request at all, and the group's authorization would go unchecked.
        consumer.commitSync(Map.of(tp, new OffsetAndMetadata(consumer.position(tp))));
      }
      return n;
    }
  }

  @Test
  void aWrongPasswordIsRefused() {
    Map<String, Object> c = broker.clientConfig(Principal.AGENT.user, "not-the-password");
    assertInstanceOf(SaslAuthenticationException.class, write(c, "wattgraph.connections"));
  }

  /** docs/security/kafka.md's rotation: a new password by the Admin API; the old one stops working. */
  @Test
  void aPasswordRotatedByTheAdminApiReplacesTheOldOne() throws Exception {
    String user = "rotation-test";
    try (Admin admin = broker.admin()) {
      for (String pw : List.of("first-password", "second-password")) {
        admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
            new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), pw))).all().get();
        awaitLogin(user, pw, null);
      }
    }
    awaitLogin(user, "first-password", SaslAuthenticationException.class);
  }

  /** Until a login as {@code user} fails with {@code failure} (null: succeeds), at most 30 s. */
  private void awaitLogin(String user, String password, Class<? extends Throwable> failure) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    Throwable last = null;
    while (System.nanoTime() < deadline) {
      Map<String, Object> c = broker.clientConfig(user, password);
      c.put("request.timeout.ms", 10_000);
      c.put("default.api.timeout.ms", 10_000);
      try (Admin a = Admin.create(c)) {
        a.listTopics().names().get();
        last = null;
      } catch (ExecutionException e) {
        last = e.getCause();
      }
      if (failure == null ? last == null : failure.isInstance(last)) {
        return;
      }
      Thread.sleep(200);
    }
    throw new AssertionError(user + " with " + password + ": expected " + failure + ", last " + last);
  }

  @Test
  void clientFilesHoldTheSecretsForTheirOwnerOnly() throws Exception {
    for (Principal p : Principal.values()) {
      for (Path f : List.of(broker.security().librdkafkaProperties(p), broker.security().javaProperties(p))) {
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)), f.toString());
        assertTrue(Files.readString(f).contains(broker.security().password(p)), f.toString());
      }
    }
    String rd = Files.readString(broker.security().librdkafkaProperties(Principal.AGENT));
    assertTrue(rd.contains("security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=wattgraph-agent\n"), rd);
  }
}
