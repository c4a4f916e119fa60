package io.wattgraph.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.KafkaSecurity.Principal;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chart's topic hook (k8s/images/kafka CreateTopics) against a SASL_SSL broker with the ACLs of
 * docs/contracts.md: with an admin's client file, or one of a principal granted only CREATE and DESCRIBE
 * on the topics, it creates what is missing; a principal without CREATE fails naming the topic; a refused
 * login ends the run instead of waiting for ever; a bad file is refused naming the key, never showing a
 * secret.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CreateTopicsTest {

  @TempDir static Path dir;
  private KafkaBroker broker;

  @BeforeAll
  void start() throws Exception {
    broker = KafkaBroker.startSecure(dir.resolve("broker"), 0, 0);
  }

  @AfterAll
  void stop() {
    broker.close();
  }

  private record Ran(int exit, String out, String err) {}

  private static Ran run(String... args) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    // Bounded: the run it replaces waited for ever on a refused login.
    int exit = assertTimeoutPreemptively(Duration.ofMinutes(3), () -> CreateTopics.run(args,
        new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8)));
    return new Ran(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  private String file(Principal p) {
    return broker.security().javaProperties(p).toString();
  }

  @Test
  void withAnAdminsClientFileItCreatesWhatIsMissingOnASecuredBroker() throws Exception {
    Ran first = run("--command-config", file(Principal.ADMIN), broker.bootstrapServers(), "1",
        "wattgraph.hook-a:3", "wattgraph.hook-b:1:cleanup.policy=compact", "wattgraph.connections:6");
    assertEquals(0, first.exit(), first.err());
    assertTrue(first.out().contains("created topic wattgraph.hook-a"), first.out());
    assertTrue(first.out().contains("created topic wattgraph.hook-b"), first.out());
    // Created up front by the broker: left as it is.
    assertFalse(first.out().contains("created topic wattgraph.connections"), first.out());
    try (Admin admin = broker.admin()) {
      Map<String, TopicDescription> d = admin.describeTopics(List.of("wattgraph.hook-a", "wattgraph.hook-b"))
          .allTopicNames().get();
      assertEquals(3, d.get("wattgraph.hook-a").partitions().size());
      assertEquals(1, d.get("wattgraph.hook-b").partitions().size());
      ConfigResource b = new ConfigResource(ConfigResource.Type.TOPIC, "wattgraph.hook-b");
      assertEquals("compact", admin.describeConfigs(List.of(b)).all().get().get(b).get("cleanup.policy").value());
    }
    Ran again = run("--command-config", file(Principal.ADMIN), broker.bootstrapServers(), "1",
        "wattgraph.hook-a:3", "wattgraph.hook-b:1:cleanup.policy=compact");
    assertEquals(0, again.exit(), again.err());
    assertFalse(again.out().contains("created topic"), again.out());
  }

  @Test
  void aPrincipalGrantedCreateAndDescribeOnTheTopicsIsEnough() throws Exception {
    String user = "wattgraph-topics";
    String password = "topics-password-1";
    try (Admin admin = broker.admin()) {
      admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
          new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password))).all().get();
      ResourcePattern topics = new ResourcePattern(ResourceType.TOPIC, "wattgraph.hook-f", PatternType.PREFIXED);
      admin.createAcls(List.of(AclOperation.CREATE, AclOperation.DESCRIBE).stream().map(op -> new AclBinding(topics,
          new AccessControlEntry("User:" + user, "*", op, AclPermissionType.ALLOW))).toList()).all().get();
    }
    Path file = Files.writeString(dir.resolve("topics.properties"), broker.security().javaClientProperties(user, password));
    // A new SCRAM credential and ACLs reach the broker's login and authorizer shortly after the call.
    Ran r = null;
    for (int i = 0; i < 50 && (r == null || r.exit() != 0); i++) {
      if (r != null) {
        Thread.sleep(200);
      }
      r = run("--command-config", file.toString(), broker.bootstrapServers(), "1", "wattgraph.hook-f1:2");
    }
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().contains("topic wattgraph.hook-f1: 2 partitions"), r.out());
    assertTrue(broker.topics().contains("wattgraph.hook-f1"));
  }

  @Test
  void aPrincipalWithoutCreateFailsNamingTheTopic() throws Exception {
    Ran r = run("--command-config", file(Principal.AGENT), broker.bootstrapServers(), "1", "wattgraph.hook-c:1");
    assertEquals(1, r.exit(), r.out() + r.err());
    assertTrue(r.err().contains("cannot create topic wattgraph.hook-c"), r.err());
    assertTrue(r.err().contains("TopicAuthorizationException"), r.err());
    assertFalse(broker.topics().contains("wattgraph.hook-c"));
  }

  @Test
  void aRefusedLoginEndsTheRunAndTheMessageHidesThePassword() throws Exception {
    String text = Files.readString(broker.security().javaProperties(Principal.ADMIN));
    String password = broker.security().password(Principal.ADMIN);
    Path wrong = Files.writeString(dir.resolve("wrong.properties"), text.replace(password, "not-the-password-42"));
    Ran r = run("--command-config", wrong.toString(), broker.bootstrapServers(), "1", "wattgraph.hook-d:1");
    assertEquals(1, r.exit(), r.out() + r.err());
    assertTrue(r.err().contains("SaslAuthenticationException"), r.err());
    assertFalse(r.err().contains("not-the-password-42"), r.err());
    assertFalse(broker.topics().contains("wattgraph.hook-d"));
  }

  @Test
  void aBadClientFileIsRefusedNamingWhatIsWrongNeverAValue() throws Exception {
    String secret = "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required"
        + " username=\"u\" password=\"s3cret-value\";\n";
    Map<String, String> refused = Map.of(
        "bootstrap.servers=elsewhere:9092\n", "bootstrap.servers is not taken from the file",
        "bootstrap.controllers=elsewhere:9093\n", "bootstrap.controllers is not taken from the file",
        "acks=all\n", "acks is not a setting of Kafka's admin client",
        "request.timeout.ms=soon\n", "request.timeout.ms",
        "security.protocol=SASL_TLS\n", "security.protocol");
    for (Map.Entry<String, String> e : refused.entrySet()) {
      Path f = Files.writeString(dir.resolve("bad.properties"), secret + e.getKey());
      Ran r = run("--command-config", f.toString(), broker.bootstrapServers(), "1", "wattgraph.hook-e:1");
      assertEquals(2, r.exit(), e.getKey() + r.err());
      assertTrue(r.err().contains(e.getValue()) && r.err().contains(f.toString()), e.getKey() + ": " + r.err());
      assertFalse(r.err().contains("s3cret-value"), r.err());
    }
    Path missing = dir.resolve("no-such.properties");
    Ran r = run("--command-config", missing.toString(), broker.bootstrapServers(), "1", "wattgraph.hook-e:1");
    assertEquals(2, r.exit());
    assertTrue(r.err().contains(missing.toString()), r.err());
    Ran three = run(broker.bootstrapServers(), "three", "wattgraph.hook-e:1");
    assertEquals(2, three.exit());
    assertTrue(three.err().contains("replication factor three is not a number"), three.err());
    assertEquals(2, run("--command-config").exit());
    assertEquals(2, run("--command-config", file(Principal.ADMIN), broker.bootstrapServers()).exit());
    assertFalse(broker.topics().contains("wattgraph.hook-e"));
  }
}
