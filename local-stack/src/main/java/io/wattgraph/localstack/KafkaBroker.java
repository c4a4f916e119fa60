package io.wattgraph.localstack;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * A real single-node Kafka broker in KRaft mode (broker and controller in one process), started
 * from the Maven Central jars. Storage is formatted on first start and kept across restarts.
 */
public final class KafkaBroker implements AutoCloseable {

  private final KafkaRaftServer server;
  private final String bootstrap;
  /** null: PLAINTEXT, no authorizer. */
  private final KafkaSecurity security;

  private KafkaBroker(KafkaRaftServer server, String bootstrap, KafkaSecurity security) {
    this.server = server;
    this.bootstrap = bootstrap;
    this.security = security;
  }

  /** Starts a PLAINTEXT broker with data under dataDir; a port of 0 picks a free one. */
  public static KafkaBroker start(Path dataDir, int port, int controllerPort) throws Exception {
    return start(dataDir, port, controllerPort, null);
  }

  /**
   * Starts a broker whose clients connect with SASL_SSL (SCRAM-SHA-512) as one of the
   * {@link KafkaSecurity.Principal}s, with an authorizer that allows nothing without an ACL and the
   * ACLs of {@link WattgraphAcls}. Certificates, passwords and client files: {@link #security()}.
   */
  public static KafkaBroker startSecure(Path dataDir, int port, int controllerPort) throws Exception {
    KafkaBroker broker = start(dataDir, port, controllerPort, KafkaSecurity.prepare(dataDir.resolve("security")));
    try (Admin admin = broker.admin()) {
      admin.createAcls(WattgraphAcls.bindings()).all().get();
    }
    // No client may create topics (the authorizer's auto-creation needs CREATE): all of them up front.
    for (String t : WattgraphAcls.TOPICS) {
      broker.createTopic(t, 2);
    }
    for (String t : List.of(WattgraphAcls.SERVICE_MAPPINGS, WattgraphAcls.POWER_BUDGETS)) {
      broker.createTopic(t, 1, Map.of("cleanup.policy", "compact"));
    }
    return broker;
  }

  private static KafkaBroker start(Path dataDir, int port, int controllerPort, KafkaSecurity security)
      throws Exception {
    int[] ports = FreePorts.resolve(port, controllerPort);
    int p = ports[0];
    int cp = ports[1];
    Path logDir = dataDir.toAbsolutePath().resolve("kraft-logs");
    Files.createDirectories(logDir);

    Properties props = new Properties();
    props.put("process.roles", "broker,controller");
    props.put("node.id", "1");
    props.put("controller.quorum.voters", "1@127.0.0.1:" + cp);
    props.put("listeners", "PLAINTEXT://127.0.0.1:" + p + ",CONTROLLER://127.0.0.1:" + cp);
    props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + p);
    props.put("controller.listener.names", "CONTROLLER");
    props.put("inter.broker.listener.name", "PLAINTEXT");
    props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    props.put("log.dirs", logDir.toString());
    // One node: every internal topic has a single replica.
    props.put("offsets.topic.replication.factor", "1");
    props.put("offsets.topic.num.partitions", "4");
    props.put("transaction.state.log.replication.factor", "1");
    props.put("transaction.state.log.min.isr", "1");
    props.put("transaction.state.log.num.partitions", "4");
    props.put("share.coordinator.state.topic.replication.factor", "1");
    props.put("share.coordinator.state.topic.min.isr", "1");
    props.put("group.initial.rebalance.delay.ms", "0");
    props.put("num.partitions", "2");
    props.put("auto.create.topics.enable", "true");
    // No retention by time. Time-based retention uses the records' own timestamps, and the
    // stream jobs stamp their results with the window end, the agents' event time. Tests (and
    // replays of old agent data) use event times years in the past: with the default 7 days, the
    // broker's first retention check (30 s after start, then every 5 min) deleted every closed
    // segment (e.g. a committed transaction's WindowMetrics, closed by its commit marker, whose
    // timestamp is the present) as soon as it was written. A size limit keeps a long-running local
    // stack bounded instead.
    props.put("log.retention.ms", "-1");
    props.put("log.retention.bytes", Long.toString(1L << 30));
    if (security != null) {
      security.configure(props, p, cp);
    }
    KafkaConfig config = KafkaConfig.fromProps(props, false);

    Formatter formatter = new Formatter()
        .setNodeId(1)
        .setClusterId(clusterId(dataDir))
        .addDirectory(logDir.toString())
        .setMetadataLogDirectory(Optional.of(logDir.toString()))
        .setControllerListenerName("CONTROLLER")
        .setReleaseVersion(MetadataVersion.latestProduction())
        .setSupportedFeatures(Feature.PRODUCTION_FEATURES)
        .setIgnoreFormatted(true)
        .setPrintStream(System.err);
    if (security != null) {
      formatter.setScramArguments(security.scramArguments());
    }
    formatter.run();

    KafkaRaftServer server = new KafkaRaftServer(config, Time.SYSTEM);
    server.startup();
    KafkaBroker broker = new KafkaBroker(server, "127.0.0.1:" + p, security);
    broker.awaitReady();
    return broker;
  }

  /** The cluster id is chosen once per data directory, so a restart reuses the formatted storage. */
  private static String clusterId(Path dataDir) throws Exception {
    Path f = dataDir.resolve("cluster-id");
    if (Files.exists(f)) {
      return Files.readString(f).strip();
    }
    String id = Uuid.randomUuid().toString();
    Files.createDirectories(dataDir);
    Files.writeString(f, id);
    return id;
  }

  private void awaitReady() throws Exception {
    long deadline = System.nanoTime() + 60_000_000_000L;
    Exception last = null;
    while (System.nanoTime() < deadline) {
      try (Admin admin = admin()) {
        if (!admin.describeCluster().nodes().get().isEmpty()) {
          return;
        }
      } catch (ExecutionException e) {
        last = e;
      }
      Thread.sleep(200);
    }
    throw new IllegalStateException("Kafka broker at " + bootstrap + " did not become ready in 60 s", last);
  }

  public String bootstrapServers() {
    return bootstrap;
  }

  /** The TLS material and credentials of a {@link #startSecure} broker; null for a PLAINTEXT one. */
  public KafkaSecurity security() {
    return security;
  }

  /** An admin client; on a secure broker it logs in as the super user. */
  public Admin admin() {
    Map<String, Object> config = new HashMap<>(Map.of(
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000,
        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000));
    config.putAll(security == null ? Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap)
        : clientConfig(KafkaSecurity.Principal.ADMIN.user, security.password(KafkaSecurity.Principal.ADMIN)));
    return Admin.create(config);
  }

  /** Java client settings of a secure broker's client logging in as {@code user} (tests try wrong ones). */
  public Map<String, Object> clientConfig(String user, String password) {
    Map<String, Object> c = new HashMap<>(security.javaClientConfig(user, password));
    c.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    return c;
  }

  /** Creates the topic unless it exists. */
  public void createTopic(String name, int partitions) throws Exception {
    createTopic(name, partitions, Map.of());
  }

  public void createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
    try (Admin admin = admin()) {
      if (admin.listTopics().names().get().contains(name)) {
        return;
      }
      admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs))).all().get();
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw e;
      }
    }
  }

  public Set<String> topics() throws Exception {
    try (Admin admin = admin()) {
      return admin.listTopics().names().get();
    }
  }

  @Override
  public void close() {
    server.shutdown();
    server.awaitShutdown();
  }
}
