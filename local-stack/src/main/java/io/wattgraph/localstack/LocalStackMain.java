package io.wattgraph.localstack;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * Runs one local-stack server in this JVM until it is stopped (SIGTERM/SIGINT):
 * {@code kafka DATA_DIR PORT CONTROLLER_PORT TOPIC...}, {@code kafka-secure DATA_DIR PORT CONTROLLER_PORT}
 * (SASL_SSL with Wattgraph's principals and ACLs; client settings in DATA_DIR/security/clients) or
 * {@code neo4j DATA_DIR BOLT_PORT}.
 * Each server gets a JVM of its own because Kafka's fatal-fault handler halts the whole JVM.
 * Once serving, it writes DATA_DIR/ready, which bin/wattgraph waits for.
 */
public final class LocalStackMain {

  private LocalStackMain() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      usage("expected a server name, a data directory and a port");
    }
    Path dir = Path.of(args[1]);
    Files.createDirectories(dir);
    Path ready = dir.resolve("ready");
    Files.deleteIfExists(ready);
    AutoCloseable server;
    String where;
    switch (args[0]) {
      case "kafka", "kafka-secure" -> {
        if (args.length < 4) {
          usage(args[0] + " needs DATA_DIR PORT CONTROLLER_PORT [TOPIC...]");
        }
        KafkaBroker broker = args[0].equals("kafka")
            ? KafkaBroker.start(dir, port(args[2]), port(args[3]))
            : KafkaBroker.startSecure(dir, port(args[2]), port(args[3]));
        for (int i = 4; i < args.length; i++) {
          broker.createTopic(args[i], 2);
        }
        server = broker;
        where = broker.bootstrapServers();
      }
      case "neo4j" -> {
        Neo4jServer neo4j = Neo4jServer.start(dir.resolve("neo4j"), port(args[2]));
        server = neo4j;
        where = neo4j.boltUri();
      }
      default -> {
        usage("unknown server '" + args[0] + "' (kafka, kafka-secure or neo4j)");
        return;
      }
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        server.close();
      } catch (Exception e) {
        e.printStackTrace();
      } finally {
        stopped.countDown();
      }
    }, "local-stack-shutdown"));
    Files.writeString(ready, where + "\n");
    System.err.println("wattgraph local-stack: " + args[0] + " ready at " + where);
    stopped.await();
  }

  private static int port(String s) {
    try {
      int p = Integer.parseInt(s);
      if (p < 0 || p > 65535) {
        throw new NumberFormatException();
      }
      return p;
    } catch (NumberFormatException e) {
      usage("port must be a number from 0 to 65535, got '" + s + "'");
      return -1;
    }
  }

  private static void usage(String why) {
    System.err.println("local-stack: " + why);
    System.err.println("usage: LocalStackMain kafka DATA_DIR PORT CONTROLLER_PORT [TOPIC...]");
    System.err.println("       LocalStackMain kafka-secure DATA_DIR PORT CONTROLLER_PORT [TOPIC...]");
    System.err.println("       LocalStackMain neo4j DATA_DIR BOLT_PORT");
    System.exit(2);
  }
}
