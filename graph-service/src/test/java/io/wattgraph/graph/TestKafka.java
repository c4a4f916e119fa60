package io.wattgraph.graph;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import io.wattgraph.localstack.KafkaBroker;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.LoggerFactory;

/**
 * Real KRaft brokers of the local stack ({@link KafkaBroker}) for the budget publisher's tests, with data
 * under target/ and ports chosen at run time. {@link #shared()} is one broker for the whole test JVM.
 */
final class TestKafka {

    private static KafkaBroker shared;

    private TestKafka() {
    }

    static synchronized String bootstrap() {
        if (shared == null) {
            shared = start(0, 0);
            Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "kafka-shutdown"));
        }
        return shared.bootstrapServers();
    }

    /** A broker on the given ports (0: any free port), with its own data directory. */
    static KafkaBroker start(int port, int controllerPort) {
        quietKafkaLogs();
        try {
            Path dir = Files.createDirectories(Path.of("target", "kafka"));
            return start(Files.createTempDirectory(dir, "broker-"), port, controllerPort);
        } catch (Exception e) {
            throw new IllegalStateException("starting a Kafka broker", e);
        }
    }

    static KafkaBroker start(Path dataDir, int port, int controllerPort) throws Exception {
        quietKafkaLogs();
        return KafkaBroker.start(dataDir, port, controllerPort);
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** The broker logs at INFO a lot; before Spring configures logging Logback's default would be DEBUG. */
    static void quietKafkaLogs() {
        for (String name : new String[] {"kafka", "org.apache.kafka", "state.change.logger", "org.apache.zookeeper"}) {
            if (LoggerFactory.getLogger(name) instanceof Logger l) {
                l.setLevel(Level.WARN);
            }
        }
    }
}
