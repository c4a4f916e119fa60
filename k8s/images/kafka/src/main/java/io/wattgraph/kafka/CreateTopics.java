package io.wattgraph.kafka;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * Creates the topics that are missing, in one request, then describes them all. Kafka's TopicCommand
 * takes one topic per JVM start: the chart's ten took three minutes on a busy two-core node.
 *
 * <pre>CreateTopics BOOTSTRAP REPLICATION-FACTOR NAME:PARTITIONS[:KEY=VALUE[,KEY=VALUE]...]...</pre>
 *
 * Waits for the brokers to answer (the hook may run before they do); exits non-zero, naming the
 * topic, when a creation fails. An existing topic is left as it is; one with fewer replicas than
 * asked is reported, since Kafka changes a replication factor only by a reassignment.
 */
public final class CreateTopics {
  private CreateTopics() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: CreateTopics BOOTSTRAP REPLICATION-FACTOR NAME:PARTITIONS[:KEY=VALUE,...]...");
      System.exit(2);
    }
    List<NewTopic> wanted = new ArrayList<>();
    short replication = 0;
    try {
      replication = Short.parseShort(args[1]);
      for (int i = 2; i < args.length; i++) {
        wanted.add(parse(args[i], replication));
      }
    } catch (IllegalArgumentException e) {
      System.err.println("CreateTopics: " + e.getMessage());
      System.exit(2);
    }
    Map<String, Object> config = new HashMap<>();
    config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    config.put(AdminClientConfig.CLIENT_ID_CONFIG, "wattgraph-create-topics");
    try (Admin admin = Admin.create(config)) {
      Set<String> existing = existing(admin, args[0]);
      List<NewTopic> missing = wanted.stream().filter(t -> !existing.contains(t.name())).toList();
      var results = admin.createTopics(missing).values();
      int failed = 0;
      for (NewTopic t : missing) {
        try {
          results.get(t.name()).get(2, TimeUnit.MINUTES);
          System.out.println("created topic " + t.name());
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof TopicExistsException)) {
            System.err.println("cannot create topic " + t.name() + ": " + e.getCause());
            failed++;
          }
        }
      }
      Map<String, TopicDescription> described = new TreeMap<>(
          admin.describeTopics(wanted.stream().map(NewTopic::name).toList()).allTopicNames().get(2, TimeUnit.MINUTES));
      for (TopicDescription d : described.values()) {
        int replicas = d.partitions().get(0).replicas().size();
        System.out.printf("topic %s: %d partitions, replication factor %d%n", d.name(), d.partitions().size(), replicas);
        if (replicas < replication) {
          System.err.printf("WARNING: topic %s has %d replicas, not %d: another client created it first;"
              + " kafka-reassign-partitions adds replicas%n", d.name(), replicas, replication);
        }
      }
      System.exit(failed == 0 ? 0 : 1);
    }
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

  /** The topics there are, once the brokers answer; retried every 5 s. */
  static Set<String> existing(Admin admin, String bootstrap) throws InterruptedException {
    while (true) {
      try {
        return admin.listTopics().names().get(30, TimeUnit.SECONDS);
      } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
        System.err.println("waiting for " + bootstrap + ": " + e);
        Thread.sleep(5000);
      }
    }
  }
}
