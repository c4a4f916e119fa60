package io.wattgraph.localstack;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * What a local SASL_SSL broker needs and gives its clients, made once per directory and kept across
 * restarts: a CA and a broker certificate for 127.0.0.1/localhost (the JDK's keytool: no library of
 * the field makes certificates without a heavy dependency, and keytool is in every JDK), a SCRAM-SHA-512
 * password per {@link Principal}, and per principal the client properties of librdkafka
 * ({@code clients/NAME.librdkafka.properties}: the agent, the service mapper) and of the Java client
 * ({@code clients/NAME.java.properties}: the stream job, graph-service). Secret files are mode 600.
 * The CA's key stays in {@code ca.p12}, which no client gets.
 */
public final class KafkaSecurity {

  /** The SCRAM users of a Wattgraph cluster (docs/contracts.md "Kafka principals and ACLs"). */
  public enum Principal {
    /** Super user: the broker's own inter-broker logins and the local stack's admin client. */
    ADMIN("wattgraph-admin"),
    AGENT("wattgraph-agent"),
    SERVICE_MAPPER("wattgraph-service-mapper"),
    STREAM_JOBS("wattgraph-stream-jobs"),
    GRAPH_SERVICE("wattgraph-graph-service");

    public final String user;

    Principal(String user) {
      this.user = user;
    }
  }

  /** The broker certificate's DN: the broker's principal on the controller listener (mutual TLS). */
  static final String BROKER_DN = "CN=wattgraph-broker";
  static final String MECHANISM = "SCRAM-SHA-512";

  private final Path dir;
  private final Properties secrets;

  private KafkaSecurity(Path dir, Properties secrets) {
    this.dir = dir;
    this.secrets = secrets;
  }

  /** Uses what {@code dir} holds, or makes it (keys, certificates, passwords, client files). */
  public static KafkaSecurity prepare(Path dir) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    Path secretsFile = dir.resolve("secrets.properties");
    Properties secrets = new Properties();
    if (Files.exists(secretsFile) && Files.exists(dir.resolve("broker.p12"))) {
      try (var in = Files.newBufferedReader(secretsFile)) {
        secrets.load(in);
      }
      return new KafkaSecurity(dir, secrets);
    }
    secrets.setProperty("keystore", randomSecret());
    for (Principal p : Principal.values()) {
      secrets.setProperty(p.user, randomSecret());
    }
    KafkaSecurity s = new KafkaSecurity(dir, secrets);
    s.makeCertificates();
    StringBuilder text = new StringBuilder("# passwords of the local broker's keystore and SCRAM users\n");
    secrets.stringPropertyNames().stream().sorted()
        .forEach(k -> text.append(k).append('=').append(secrets.getProperty(k)).append('\n'));
    writeSecret(secretsFile, text.toString());
    for (Principal p : Principal.values()) {
      writeSecret(s.librdkafkaProperties(p), s.librdkafka(p));
      writeSecret(s.javaProperties(p), s.javaClientProperties(p.user, s.password(p)));
    }
    return s;
  }

  /** Hex: safe inside JAAS quotes and the storage formatter's SCRAM arguments. */
  private static String randomSecret() {
    byte[] b = new byte[16];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  static void writeSecret(Path file, String text) throws IOException {
    Files.deleteIfExists(file);
    Files.createDirectories(file.getParent());
    Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(file, text);
  }

  private void makeCertificates() throws IOException, InterruptedException {
    String pw = secrets.getProperty("keystore");
    String ca = dir.resolve("ca.p12").toString();
    String broker = dir.resolve("broker.p12").toString();
    String san = "SAN=ip:127.0.0.1,dns:localhost";
    for (String f : List.of("ca.p12", "broker.p12", "broker.csr", "broker.crt", "ca.pem")) {
      Files.deleteIfExists(dir.resolve(f));
    }
    keytool("-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
        "-dname", "CN=wattgraph-local-ca", "-ext", "bc:c", "-keystore", ca, "-storetype", "PKCS12", "-storepass", pw);
    keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", ca, "-storepass", pw, "-file", caPem().toString());
    keytool("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity", "825",
        "-dname", BROKER_DN, "-ext", san, "-keystore", broker, "-storetype", "PKCS12", "-storepass", pw);
    keytool("-certreq", "-alias", "broker", "-keystore", broker, "-storepass", pw,
        "-file", dir.resolve("broker.csr").toString());
    keytool("-gencert", "-rfc", "-alias", "ca", "-keystore", ca, "-storepass", pw, "-validity", "825",
        "-infile", dir.resolve("broker.csr").toString(), "-outfile", dir.resolve("broker.crt").toString(),
        "-ext", san, "-ext", "KU=digitalSignature,keyEncipherment", "-ext", "EKU=serverAuth,clientAuth");
    // The chain into the broker's keystore: the CA first, so keytool links the signed certificate to it.
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", caPem().toString(), "-keystore", broker,
        "-storepass", pw);
    keytool("-importcert", "-alias", "broker", "-file", dir.resolve("broker.crt").toString(), "-keystore", broker,
        "-storepass", pw);
  }

  private static void keytool(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "keytool").toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("keytool " + args[0] + " failed: " + out);
    }
  }

  /** The CA certificate (PEM) every client trusts: librdkafka's ssl.ca.location, Java's PEM truststore. */
  public Path caPem() {
    return dir.resolve("ca.pem");
  }

  public String password(Principal p) {
    return secrets.getProperty(p.user);
  }

  /** librdkafka properties of {@code p} (--kafka-config of the agent and the service mapper). */
  public Path librdkafkaProperties(Principal p) {
    return dir.resolve("clients").resolve(p.user + ".librdkafka.properties");
  }

  /** Java client properties of {@code p} (the stream job's --kafka-properties, graph-service's map). */
  public Path javaProperties(Principal p) {
    return dir.resolve("clients").resolve(p.user + ".java.properties");
  }

  private String librdkafka(Principal p) {
    return String.join("\n", "security.protocol=SASL_SSL", "sasl.mechanisms=" + MECHANISM,
        "sasl.username=" + p.user, "sasl.password=" + password(p), "ssl.ca.location=" + caPem(), "");
  }

  /** {@link #javaClientConfig} as a properties file's text (a client file for any SCRAM user). */
  public String javaClientProperties(String user, String password) {
    StringBuilder s = new StringBuilder();
    javaClientConfig(user, password).forEach((k, v) -> s.append(k).append('=').append(v).append('\n'));
    return s.toString();
  }

  /** Java client settings of a SCRAM login as {@code user} over TLS trusting the local CA. */
  public Map<String, String> javaClientConfig(String user, String password) {
    return Map.of("security.protocol", "SASL_SSL", "sasl.mechanism", MECHANISM,
        "sasl.jaas.config", jaas(user, password), "ssl.truststore.type", "PEM",
        "ssl.truststore.location", caPem().toString());
  }

  static String jaas(String user, String password) {
    return "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user
        + "\" password=\"" + password + "\";";
  }

  /** The SCRAM credentials the storage is formatted with: every principal exists from the first start. */
  List<String> scramArguments() {
    List<String> out = new ArrayList<>();
    for (Principal p : Principal.values()) {
      out.add(MECHANISM + "=[name=" + p.user + ",password=" + password(p) + "]");
    }
    return out;
  }

  /**
   * The broker's listeners: clients on SASL_SSL (SCRAM-SHA-512), also the broker's own inter-broker
   * logins as the admin; the controller listener on mutual TLS, so only holders of a certificate of
   * the local CA (the broker) reach it. ACLs decide everything else; nothing is allowed without one.
   */
  void configure(Properties props, int port, int controllerPort) {
    props.put("listeners", "SASL_SSL://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
    props.put("advertised.listeners", "SASL_SSL://127.0.0.1:" + port);
    props.put("inter.broker.listener.name", "SASL_SSL");
    props.put("listener.security.protocol.map", "SASL_SSL:SASL_SSL,CONTROLLER:SSL");
    props.put("sasl.enabled.mechanisms", MECHANISM);
    props.put("sasl.mechanism.inter.broker.protocol", MECHANISM);
    props.put("listener.name.sasl_ssl." + MECHANISM.toLowerCase() + ".sasl.jaas.config",
        jaas(Principal.ADMIN.user, password(Principal.ADMIN)));
    props.put("ssl.keystore.type", "PKCS12");
    props.put("ssl.keystore.location", dir.resolve("broker.p12").toString());
    props.put("ssl.keystore.password", secrets.getProperty("keystore"));
    props.put("ssl.key.password", secrets.getProperty("keystore"));
    props.put("ssl.truststore.type", "PEM");
    props.put("ssl.truststore.location", caPem().toString());
    props.put("listener.name.controller.ssl.client.auth", "required");
    props.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
    props.put("allow.everyone.if.no.acl.found", "false");
    props.put("super.users", "User:" + Principal.ADMIN.user + ";User:" + BROKER_DN);
  }
}
