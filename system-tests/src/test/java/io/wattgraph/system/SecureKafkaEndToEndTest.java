package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.net.httpserver.HttpServer;
import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.KafkaSecurity;
import io.wattgraph.localstack.KafkaSecurity.Principal;
import io.wattgraph.localstack.Neo4jServer;
import io.wattgraph.schema.ServiceMapping;
import io.wattgraph.stream.JobConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;

/**
 * Kafka with TLS and SASL (SCRAM-SHA-512) end to end: the local broker on SASL_SSL with an authorizer
 * that allows only the ACLs of docs/contracts.md, and every component configured by its own flags or
 * properties with its own principal: the real agent (a loopback TCP exchange in a namespace this test
 * makes; power cap in dry-run), the stream job (its command line, in this JVM as the other system tests
 * run it), graph-service (the packaged application, its budget loop on) and the service mapper binary
 * (against a stand-in API server on loopback). The connection's edge must reach Neo4j, a budget the agent,
 * a mapping the topic, a bad record the job's transactional dead-letter topic. Then what must fail does:
 * the agent's principal writing budgets, the mapper run as the agent, a wrong password, a PLAINTEXT
 * client on the TLS port, a client that does not trust the CA.
 * Needs root, the agent and mapper binaries and the packaged graph-service
 * ({@code mvn -pl graph-service,system-tests -am verify -Dtest=SecureKafkaEndToEndTest ...}).
 */
class SecureKafkaEndToEndTest {
  private static final String HOST = "sec-host";

  @Test
  void everyComponentWorksOverSaslSslAndTheAclsRefuseTheRest() throws Exception {
    Preconditions.requireRoot();
    Path agentBin = Preconditions.agentBinary();
    Path mapperBin = agentBin.resolveSibling("wattgraph-service-mapper");
    Preconditions.require(Files.isExecutable(mapperBin), "service mapper not built at " + mapperBin);
    Path work = Files.createDirectories(Path.of("target", "system-test-secure-kafka", "run-" + System.nanoTime())
        .toAbsolutePath());
    String ns = "wgsk" + ProcessHandle.current().pid();
    List<AutoCloseable> started = new ArrayList<>();
    GraphServiceProcess service = null;
    try {
      KafkaBroker kafka = add(started, KafkaBroker.startSecure(work.resolve("kafka"), 0, 0));
      KafkaSecurity sec = kafka.security();
      Neo4jServer neo4j = add(started, Neo4jServer.start(work.resolve("neo4j"), 0));
      Driver driver = add(started, GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none()));
      Shell.runQuietly("ip", "netns", "del", ns);
      Shell.run("ip", "netns", "add", ns);
      started.add(() -> Shell.runQuietly("ip", "netns", "del", ns));
      Shell.run("ip", "-n", ns, "link", "set", "lo", "up");

      // The job with its own flags: --kafka-properties for every source and sink.
      RunningJob job = add(started, RunningJob.start(JobConfig.parse(new String[] {
          "--kafka-brokers", kafka.bootstrapServers(),
          "--kafka-properties", sec.javaProperties(Principal.STREAM_JOBS).toString(),
          "--neo4j-uri", neo4j.boltUri(), "--checkpoint-dir", work.resolve("checkpoints").toUri().toString(),
          "--checkpoint-interval-ms", "1000"})));

      // graph-service: Kafka settings (with the password) from a file it imports, not its command line.
      Path serviceKafka = work.resolve("graph-service-kafka.properties");
      StringBuilder spring = new StringBuilder();
      load(sec.javaProperties(Principal.GRAPH_SERVICE)).forEach((k, v) ->
          spring.append("wattgraph.power.budgets.producer.").append(k).append('=').append(v).append('\n'));
      Files.writeString(serviceKafka, spring.toString());
      service = add(started, new GraphServiceProcess(neo4j.boltUri(), work.resolve("graph-service"),
          "--spring.config.import=file:" + serviceKafka,
          "--wattgraph.power.budgets.enabled=true", "--wattgraph.power.budgets.period=2s",
          "--wattgraph.power.budgets.bootstrap-servers=" + kafka.bootstrapServers(),
          "--wattgraph.power.budgets.hosts[" + HOST + "].min-watts=50",
          "--wattgraph.power.budgets.hosts[" + HOST + "].max-watts=150"));

      // The agent: --kafka-config for its producer and its budget consumer.
      int metricsPort = FlinkClusterEndToEndTest.freePort();
      Path noRapl = Files.createDirectories(work.resolve("powercap"));
      AgentProcess agent = add(started, new AgentProcess(agentBin, HOST, Path.of("/run/netns", ns),
          kafka.bootstrapServers(), work.resolve("agent"), List.of("--no-resources",
              "--kafka-config", sec.librdkafkaProperties(Principal.AGENT).toString(),
              "--metrics-addr", "127.0.0.1:" + metricsPort,
              "--power-cap", "dry-run", "--powercap-root", noRapl.toString())));
      GraphServiceProcess graphService = service;
      Supplier<String> logs = () -> "\nagent log:\n" + agent.logText() + "\ngraph-service log (tail):\n"
          + graphService.logTail();

      TwoHostStack.Exchange ex = TwoHostStack.exchange(work, ns, "127.0.0.1", 18080, ns, "127.0.0.1", 18080,
          3000, 70_000);
      String edge = "MATCH (c:Process {hostId:$h, pid:$c})-[t:TALKS_TO]->(s:Process {hostId:$h, pid:$s}) "
          + "RETURN coalesce(max(t.bytesClientToServer * 1000000 + t.bytesServerToClient), 0)";
      await("the edge of the loopback exchange in Neo4j (agent -> SASL_SSL -> job -> Neo4j)", () ->
          driver.executableQuery(edge).withParameters(Map.of("h", HOST, "c", ex.clientPid(), "s", ex.serverPid()))
              .execute().records().get(0).get(0).asLong() == 3000L * 1_000_000 + 70_000, logs);

      await("a budget from graph-service applied by the agent (dry-run)", () -> {
        String m = FlinkClusterEndToEndTest.get("http://127.0.0.1:" + metricsPort + "/metrics");
        return m.contains("\nwattgraph_agent_power_budgets_applied_total ") && !m.contains(
            "\nwattgraph_agent_power_budgets_applied_total 0\n") && m.contains("\nwattgraph_agent_power_budget_active 1\n");
      }, logs);
      assertTrue(agent.logText().contains("received, not actuated"), agent.logText());

      // The mapper's one round, with its own principal.
      HttpServer api = fakeApiServer();
      started.add(() -> api.stop(0));
      String apiUrl = "http://127.0.0.1:" + api.getAddress().getPort();
      Mapper ok = mapper(mapperBin, kafka, sec.librdkafkaProperties(Principal.SERVICE_MAPPER), apiUrl, work, "mapper");
      assertEquals(0, ok.exit, "mapper --once:\n" + ok.log);
      ServiceMapping m = ServiceMapping.getDecoder().decode(readLatest(kafka, "wattgraph.service-mappings")
          .get("10.96.0.10:80"));
      assertEquals("10.1.0.5", m.getBackends().get(0).getAddress().toString(), m.toString());

      // The job's exactly-once dead-letter sink: transactions under its principal's transactional-id prefix.
      byte[] junk = ("not avro " + System.nanoTime()).getBytes(StandardCharsets.UTF_8);
      try (var p = new KafkaProducer<>(client(kafka, Principal.AGENT, sec.password(Principal.AGENT)),
          new ByteArraySerializer(), new ByteArraySerializer())) {
        p.send(new ProducerRecord<>("wattgraph.connections", "junk".getBytes(StandardCharsets.UTF_8), junk)).get();
      }
      await("the bad record in wattgraph.dlq, committed", () -> readCommitted(kafka, "wattgraph.dlq").stream()
          .anyMatch(v -> java.util.Arrays.equals(v, junk)), logs);
      assertEquals("RUNNING", job.status(), "the job never failed over an authorization");

      // What must be refused.
      assertInstanceOf(TopicAuthorizationException.class, send(client(kafka, Principal.AGENT,
          sec.password(Principal.AGENT)), "wattgraph.power-budgets"), "the agent's principal writes budgets");
      Mapper asAgent = mapper(mapperBin, kafka, sec.librdkafkaProperties(Principal.AGENT), apiUrl, work, "mapper-as-agent");
      assertEquals(1, asAgent.exit, "the mapper with the agent's credentials:\n" + asAgent.log);
      assertTrue(asAgent.log.contains("error: reading topic wattgraph.service-mappings: topic wattgraph.service-mappings: "
          + "TopicAuthorizationFailed"), "refused at once, not taken for an empty topic:\n" + asAgent.log);
      assertInstanceOf(SaslAuthenticationException.class, send(client(kafka, Principal.GRAPH_SERVICE,
          "not-" + sec.password(Principal.GRAPH_SERVICE)), "wattgraph.power-budgets"), "a wrong password");
      Map<String, Object> plaintext = new HashMap<>(Map.of("bootstrap.servers", kafka.bootstrapServers(),
          "security.protocol", "PLAINTEXT", "default.api.timeout.ms", 5000, "request.timeout.ms", 2000));
      try (Admin admin = Admin.create(plaintext)) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.describeCluster().nodes().get());
        assertInstanceOf(org.apache.kafka.common.errors.TimeoutException.class, e.getCause(),
            "a PLAINTEXT client gets no answer from the SASL_SSL port");
      }
      Map<String, Object> noCa = client(kafka, Principal.GRAPH_SERVICE, sec.password(Principal.GRAPH_SERVICE));
      noCa.remove("ssl.truststore.type");
      noCa.remove("ssl.truststore.location"); // the JDK's public roots only
      assertInstanceOf(SslAuthenticationException.class, send(noCa, "wattgraph.power-budgets"),
          "a client that does not trust the CA");
      assertNotEquals(null, service);
      assertTrue(service.isAlive(), "graph-service runs:" + logs.get());
    } finally {
      for (int i = started.size() - 1; i >= 0; i--) {
        try {
          started.get(i).close();
        } catch (Exception e) {
          System.err.println("teardown: " + e);
        }
      }
    }
  }

  private static <T extends AutoCloseable> T add(List<AutoCloseable> started, T c) {
    started.add(c);
    return c;
  }

  private static Properties load(Path f) throws IOException {
    Properties p = new Properties();
    try (var r = Files.newBufferedReader(f)) {
      p.load(r);
    }
    return p;
  }

  private static Map<String, Object> client(KafkaBroker kafka, Principal p, String password) {
    Map<String, Object> c = kafka.clientConfig(p.user, password);
    c.put("max.block.ms", 20_000);
    return c;
  }

  /** The cause of a failed write, or null. */
  private static Throwable send(Map<String, Object> config, String topic) {
    try (var p = new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
      p.send(new ProducerRecord<>(topic, new byte[] {1})).get();
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (org.apache.kafka.common.KafkaException e) {
      return e;
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  private static List<byte[]> readCommitted(KafkaBroker kafka, String topic) {
    List<byte[]> out = new ArrayList<>();
    readAll(kafka, topic, r -> out.add(r.value()));
    return out;
  }

  private static Map<String, byte[]> readLatest(KafkaBroker kafka, String topic) {
    Map<String, byte[]> out = new HashMap<>();
    readAll(kafka, topic, r -> out.put(new String(r.key(), StandardCharsets.UTF_8), r.value()));
    return out;
  }

  /** Every committed record of the topic, as the super user, without a group. */
  private static void readAll(KafkaBroker kafka, String topic,
      java.util.function.Consumer<ConsumerRecord<byte[], byte[]>> each) {
    Map<String, Object> c = client(kafka, Principal.ADMIN, kafka.security().password(Principal.ADMIN));
    c.put("isolation.level", "read_committed");
    try (var consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> parts = consumer.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      consumer.assign(parts);
      consumer.seekToBeginning(parts);
      Map<TopicPartition, Long> end = consumer.endOffsets(parts);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (parts.stream().anyMatch(p -> consumer.position(p) < end.get(p)) && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(each);
      }
    }
  }

  record Mapper(int exit, String log) {}

  private static Mapper mapper(Path bin, KafkaBroker kafka, Path kafkaConfig, String apiUrl, Path work, String name)
      throws Exception {
    Path log = work.resolve(name + ".log");
    Process p = new ProcessBuilder(bin.toString(), "--kafka-brokers", kafka.bootstrapServers(),
        "--kafka-config", kafkaConfig.toString(), "--api-url", apiUrl, "--once")
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail(name + " did not finish in 120 s: " + Files.readString(log));
    }
    return new Mapper(p.exitValue(), Files.readString(log));
  }

  /** Stands in for the Kubernetes API server: one Service with one ready backend. */
  private static HttpServer fakeApiServer() throws IOException {
    String services = "{\"kind\":\"ServiceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\"},"
        + "\"items\":[{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\"},\"spec\":{\"clusterIP\":\"10.96.0.10\","
        + "\"ports\":[{\"name\":\"http\",\"port\":80,\"targetPort\":8080}]}}]}";
    String slices = "{\"kind\":\"EndpointSliceList\",\"apiVersion\":\"discovery.k8s.io/v1\",\"metadata\":{},"
        + "\"items\":[{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"shop\",\"labels\":{\"kubernetes.io/service-name\":"
        + "\"web\"}},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"10.1.0.5\"],\"conditions\":{\"ready\":true},"
        + "\"nodeName\":\"node-a\"}],\"ports\":[{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"}]}]}";
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    s.createContext("/", x -> {
      String path = x.getRequestURI().getPath();
      byte[] body = (path.equals("/api/v1/services") ? services
          : path.equals("/apis/discovery.k8s.io/v1/endpointslices") ? slices : "{}").getBytes(StandardCharsets.UTF_8);
      x.getResponseHeaders().add("Content-Type", "application/json");
      x.sendResponseHeaders(body.length == 2 ? 404 : 200, body.length);
      x.getResponseBody().write(body);
      x.close();
    });
    s.start();
    return s;
  }

  private static void await(String what, java.util.function.BooleanSupplier done, Supplier<String> logs)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("timed out waiting for " + what + logs.get());
      }
      Thread.sleep(250);
    }
  }
}
