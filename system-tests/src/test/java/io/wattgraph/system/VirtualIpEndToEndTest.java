package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.ServiceBackend;
import io.wattgraph.schema.ServiceMapping;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.vip.ConnectionVirtualIpResolver;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.neo4j.driver.Record;

/**
 * Kubernetes-style virtual IPs for real: host A's kernel DNATs a service address (an unused
 * address of the test /24) to the server in host B, with an iptables rule in A's namespace. The
 * mapping (VIP:port to two backends, only one of which exists) is published to the compacted
 * service-mappings topic. A real client dials the VIP; the graph must show an edge from the client
 * process to the server process with the exact bytes, and nothing for the virtual address. A
 * second VIP, without any mapping, is also SNATed to another address and port range of A's (as
 * kube-proxy masquerades): B sees neither the client's address nor its port, and only the agent's
 * reading of A's conntrack ({@code nat} on A's events) can link the two ends.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class VirtualIpEndToEndTest {
  private static final String TOPIC = TwoHostStack.TOPIC;
  private static final String MAPPINGS = "wattgraph.service-mappings";
  private static final int SUBNET = 78;
  private static final String VIP = "10.231." + SUBNET + ".100";
  private static final int VIP_PORT = 8080;
  private static final int SERVER_PORT = 7080;
  private static final String SNAT_VIP = "10.231." + SUBNET + ".101";
  private static final int SNAT_VIP_PORT = 8081;
  private static final int SNAT_SERVER_PORT = 7081;
  private static final String SNAT_SOURCE = "10.231." + SUBNET + ".4";

  private TwoHostStack stack;

  @BeforeAll
  void startEverything() throws Exception {
    stack = new TwoHostStack("vip", SUBNET, Path.of("target", "system-test-vip").toAbsolutePath());
    TwoHostNetwork net = stack.net;
    // Host A's kernel translates VIP:8080 to the server in host B, as kube-proxy would (no SNAT).
    Shell.run("ip", "netns", "exec", net.nsA, "iptables", "-t", "nat", "-A", "OUTPUT", "-d", VIP, "-p", "tcp",
        "--dport", String.valueOf(VIP_PORT), "-j", "DNAT", "--to-destination", net.addrB + ":" + SERVER_PORT);
    // The second VIP: DNAT, then SNAT of what was DNATed to an address of A's and a port range.
    Shell.run("ip", "-n", net.nsA, "addr", "add", SNAT_SOURCE + "/24", "dev", net.vethA);
    Shell.run("ip", "netns", "exec", net.nsA, "iptables", "-t", "nat", "-A", "OUTPUT", "-d", SNAT_VIP, "-p", "tcp",
        "--dport", String.valueOf(SNAT_VIP_PORT), "-j", "DNAT", "--to-destination", net.addrB + ":" + SNAT_SERVER_PORT);
    Shell.run("ip", "netns", "exec", net.nsA, "iptables", "-t", "nat", "-A", "POSTROUTING", "-d", net.addrB, "-p", "tcp",
        "--dport", String.valueOf(SNAT_SERVER_PORT), "-m", "conntrack", "--ctstate", "DNAT", "-j", "SNAT",
        "--to-source", SNAT_SOURCE + ":41000-41999");
    stack.kafka.createTopic(MAPPINGS, 1, Map.of("cleanup.policy", "compact"));
    long appliedBefore = ConnectionVirtualIpResolver.UPDATES_APPLIED.get();
    publishMapping();
    stack.startJob();
    // Broadcast: every resolver subtask (parallelism 2) must have the mapping before traffic starts.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (ConnectionVirtualIpResolver.UPDATES_APPLIED.get() < appliedBefore + 2) {
      assertTrue(System.nanoTime() < deadline, "the job did not apply the service mapping");
      Thread.sleep(100);
    }
    stack.startAgents();
  }

  /** Two backends, so the job must find out which one served the client (the real one, .2). */
  private void publishMapping() throws Exception {
    ServiceMapping m = ServiceMapping.newBuilder()
        .setVip(VIP).setPort(VIP_PORT).setNamespace("shop").setService("cart")
        .setBackends(List.of(
            ServiceBackend.newBuilder().setAddress("10.231." + SUBNET + ".3").setPort(SERVER_PORT).build(),
            ServiceBackend.newBuilder().setAddress(stack.net.addrB).setPort(SERVER_PORT).setNodeName("host-b").build()))
        .build();
    ByteBuffer b = ServiceMapping.getEncoder().encode(m);
    byte[] value = new byte[b.remaining()];
    b.get(value);
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafka.bootstrapServers());
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
      producer.send(new ProducerRecord<>(MAPPINGS, VIP + ":" + VIP_PORT, value)).get();
    }
  }

  @AfterAll
  void stopEverything() {
    // Deleting the namespaces also removes the iptables rule that lives in A's namespace.
    if (stack != null) {
      stack.close();
    }
  }

  @Test
  void clientDiallingTheVirtualIpIsLinkedToTheBackendProcess() throws Exception {
    long request = 2L * 1024 * 1024 + 5;
    long response = 54_321;
    // The client knows only the virtual address (it fails if the DNAT rule is not in place).
    TwoHostStack.Exchange ex = stack.exchange(SERVER_PORT, VIP, VIP_PORT, request, response);

    Record edge = stack.awaitEdge(ex, request, response); // client -> backend process, exact bytes
    assertEquals(1, edge.get("connections").asLong());
    assertTrue(agentAReportedTheVirtualAddress(), "host A's agent must see the VIP (else nothing was translated)");
    assertEquals(0, stack.read("MATCH (x:External) WHERE x.address = $vip RETURN x", Map.of("vip", VIP)).size(),
        "no External node for the virtual address");
    assertEquals(0, stack.read("MATCH (:Process {hostId:'host-a', pid:$cpid})-[t:TALKS_TO]->(:External) RETURN t",
        Map.of("cpid", ex.clientPid())).size(), "the client talks to nothing else");
  }

  @Test
  void clientBehindDnatAndSnatIsLinkedToTheBackendWithoutAnyMapping() throws Exception {
    long request = 300_007;
    long response = 1_234_567;
    TwoHostStack.Exchange ex = stack.exchange(SNAT_SERVER_PORT, SNAT_VIP, SNAT_VIP_PORT, request, response);

    // Through DNAT and SNAT: client -> backend process, exact bytes.
    Record edge = stack.awaitEdge(ex, request, response);
    assertEquals(1, edge.get("connections").asLong());
    ConnectionEvent translated = agentAEventTowards(SNAT_VIP, SNAT_VIP_PORT);
    assertTrue(translated != null && translated.getNat() != null, "host A's agent reports the VIP with its NAT tuple");
    assertEquals(SNAT_SOURCE, IpAddresses.format(translated.getNat().getLocalAddress()), "the source B sees");
    assertEquals(stack.net.addrB, IpAddresses.format(translated.getNat().getRemoteAddress()));
    assertEquals(SNAT_SERVER_PORT, translated.getNat().getRemotePort());
    for (String address : List.of(SNAT_VIP, SNAT_SOURCE)) {
      assertEquals(0, stack.read("MATCH (x:External) WHERE x.address = $a RETURN x", Map.of("a", address)).size(),
          "no External node for " + address);
    }
    assertEquals(0, stack.read("MATCH (:Process {hostId:'host-a', pid:$cpid})-[t:TALKS_TO]->(:External) RETURN t",
        Map.of("cpid", ex.clientPid())).size(), "the client talks to nothing else");
    assertEquals(0, stack.read("MATCH (:External)-[t:TALKS_TO]->(:Process {hostId:'host-b', pid:$spid}) RETURN t",
        Map.of("spid", ex.serverPid())).size(), "nothing else talks to the backend");
  }

  /** Whether a client event of host A names the VIP as remote endpoint (the socket never sees the DNAT). */
  private boolean agentAReportedTheVirtualAddress() {
    return agentAEventTowards(VIP, VIP_PORT) != null;
  }

  /** The first event of host A whose remote endpoint is vip:port, or null. */
  private ConnectionEvent agentAEventTowards(String vip, int port) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, stack.kafka.bootstrapServers());
    var decoder = WattgraphSchemas.connectionEventDecoder();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> parts = c.partitionsFor(TOPIC).stream().map(i -> new TopicPartition(TOPIC, i.partition())).toList();
      c.assign(parts);
      c.seekToBeginning(parts);
      Map<TopicPartition, Long> end = c.endOffsets(parts);
      while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          try {
            ConnectionEvent e = decoder.decode(r.value());
            if (e.getHostId().equals("host-a") && IpAddresses.format(e.getRemoteAddress()).equals(vip)
                && e.getRemotePort() == port) {
              return e;
            }
          } catch (Exception ignored) {
            // not an event of ours
          }
        }
      }
    }
    return null;
  }
}
