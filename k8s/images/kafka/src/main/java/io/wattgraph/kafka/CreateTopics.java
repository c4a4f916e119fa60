package io.wattgraph.kafka;

import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * Creates the topics that are missing, in one request, then describes them all. Kafka's TopicCommand
 * takes one topic per JVM start: the chart's ten took three minutes on a busy two-core node.
 *
 * <pre>CreateTopics [--command-config FILE] BOOTSTRAP REPLICATION-FACTOR NAME:PARTITIONS[:KEY=VALUE[,KEY=VALUE]...]...</pre>
 *
 * {@code --command-config}: the admin client's properties (as Kafka's own tools take them), e.g. the
 * SASL_SSL login of a principal that may CREATE and DESCRIBE the topics. Waits for the brokers to answer
 * (the hook may run before they do), but not past a refused login or a denied operation; exits non-zero,
 * naming the topic, when a creation fails. An existing topic is left as it is; one with fewer replicas
 * than asked is reported, since Kafka changes a replication factor only by a reassignment.
 */
public final class CreateTopics {
  static final String USAGE = "usage: CreateTopics [--command-config FILE] BOOTSTRAP REPLICATION-FACTOR"
      + " NAME:PARTITIONS[:KEY=VALUE,...]...";

  private CreateTopics() {}

  public static void main(String[] args) throws Exception {
    System.exit(run(args, System.out, System.err));
  }

  /** 0: every topic there; 1: a creation or the brokers failed; 2: bad arguments or properties. */
  static int run(String[] argv, PrintStream out, PrintStream err) throws InterruptedException {
    List<String> args = new ArrayList<>(List.of(argv));
    Map<String, Object> config = new HashMap<>();
    List<NewTopic> wanted = new ArrayList<>();
    short replication;
    try {
      if (!args.isEmpty() && args.get(0).equals("--command-config")) {
        if (args.size() < 2) {
          throw new IllegalArgumentException("--command-config needs a file");
        }
        config.putAll(commandConfig(Path.of(args.get(1))));
        args.subList(0, 2).clear();
      }
      if (args.size() < 3) {
        err.println(USAGE);
        return 2;
      }
      try {
        replication = Short.parseShort(args.get(1));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("replication factor " + args.get(1) + " is not a number");
      }
      for (String spec : args.subList(2, args.size())) {
        wanted.add(parse(spec, replication));
      }
    } catch (IllegalArgumentException e) {
      err.println("CreateTopics: " + e.getMessage());
      return 2;
    }
    String bootstrap = args.get(0);
    config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    config.putIfAbsent(AdminClientConfig.CLIENT_ID_CONFIG, "wattgraph-create-topics");
    try (Admin admin = Admin.create(config)) {
      Set<String> existing = existing(admin, bootstrap, err);
      List<NewTopic> missing = wanted.stream().filter(t -> !existing.contains(t.name())).toList();
      var results = admin.createTopics(missing).values();
      int failed = 0;
      for (NewTopic t : missing) {
        try {
          results.get(t.name()).get(2, TimeUnit.MINUTES);
          out.println("created topic " + t.name());
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof TopicExistsException)) {
            err.println("cannot create topic " + t.name() + ": " + e.getCause());
            failed++;
          }
        }
      }
      if (failed > 0) {
        return 1;
      }
      Map<String, TopicDescription> described = new TreeMap<>(
          admin.describeTopics(wanted.stream().map(NewTopic::name).toList()).allTopicNames().get(2, TimeUnit.MINUTES));
      for (TopicDescription d : described.values()) {
        int replicas = d.partitions().get(0).replicas().size();
        out.printf("topic %s: %d partitions, replication factor %d%n", d.name(), d.partitions().size(), replicas);
        if (replicas < replication) {
          err.printf("WARNING: topic %s has %d replicas, not %d: another client created it first;"
              + " kafka-reassign-partitions adds replicas%n", d.name(), replicas, replication);
        }
      }
      return 0;
    } catch (ExecutionException e) {
      err.println("CreateTopics: " + bootstrap + ": " + e.getCause());
      return 1;
    } catch (java.util.concurrent.TimeoutException e) {
      err.println("CreateTopics: " + bootstrap + ": " + e);
      return 1;
    }
  }

  /**
   * The admin client's properties from {@code file}: every key one of the admin client's, values as Kafka
   * parses them; the brokers come from the argument, not from here. Messages name the key, never a value.
   */
  static Map<String, Object> commandConfig(Path file) {
    Properties props = new Properties();
    try (Reader in = Files.newBufferedReader(file)) {
      props.load(in);
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalArgumentException("--command-config " + file + ": cannot read it (" + e + ")");
    }
    Map<String, Object> config = new TreeMap<>();
    Set<String> known = AdminClientConfig.configNames();
    for (String key : props.stringPropertyNames()) {
      if (key.equals(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG)
          || key.equals(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG)) {
        throw new IllegalArgumentException("--command-config " + file + ": " + key
            + " is not taken from the file (the brokers are the BOOTSTRAP argument)");
      }
      if (!known.contains(key)) {
        throw new IllegalArgumentException("--command-config " + file + ": " + key
            + " is not a setting of Kafka's admin client");
      }
      config.put(key, props.getProperty(key));
    }
    try {
      Map<String, Object> check = new HashMap<>(config);
      check.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
      new AdminClientConfig(check);
    } catch (ConfigException e) {
      // Kafka's message names the key; a password's value shows as [hidden].
      throw new IllegalArgumentException("--command-config " + file + ": " + e.getMessage());
    }
    return config;
  }

  /** NAME:PARTITIONS[:KEY=VALUE,...]. */
  static NewTopic parse(String spec, short replication) {
    String[] parts = spec.split(":", 3);
    if (parts.length < 2 || parts[0].isEmpty()) {
      throw new IllegalArgumentException("topic " + spec + ": expected NAME:PARTITIONS[:KEY=VALUE,...]");
    }
    Map<String, String> configs = new HashMap<>();
    if (parts.length == 3 && !parts[2].isEmpty()) {
      for (String kv : parts[2].split(",")) {
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("topic " + parts[0] + ": config " + kv + " is not KEY=VALUE");
        }
        configs.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
    }
    int partitions;
    try {
      partitions = Integer.parseInt(parts[1]);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("topic " + parts[0] + ": partitions " + parts[1] + " is not a number");
    }
    return new NewTopic(parts[0], Optional.of(partitions), Optional.of(replication)).configs(configs);
  }

  /**
   * The topics there are, once the brokers answer; retried every 5 s, except after a refused login or a
   * denied operation, which waiting does not mend (thrown).
   */
  static Set<String> existing(Admin admin, String bootstrap, PrintStream err)
      throws InterruptedException, ExecutionException {
    while (true) {
      try {
        return admin.listTopics().names().get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof AuthenticationException || e.getCause() instanceof AuthorizationException) {
          throw e;
        }
        err.println("waiting for " + bootstrap + ": " + e.getCause());
      } catch (java.util.concurrent.TimeoutException e) {
        err.println("waiting for " + bootstrap + ": " + e);
      }
      Thread.sleep(5000);
    }
  }
}
