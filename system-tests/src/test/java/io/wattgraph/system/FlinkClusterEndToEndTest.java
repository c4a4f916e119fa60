package io.wattgraph.system;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.Neo4jServer;
import io.wattgraph.schema.AttributionWeight;
import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionRole;
import io.wattgraph.schema.ContainerRuntime;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.PowerSource;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;

/**
 * The job on a real Flink cluster, not in the test's JVM: a standalone session cluster
 * ({@link FlinkCluster}: a JobManager and a TaskManager, each its own JVM, on Flink's own classpath)
 * and the job's shaded jar submitted with Flink's CLI, flags only. Against local-stack's Kafka and
 * Neo4j: both ends of a connection in, the exact edge out. Needs the jar: runs after stream-jobs is
 * packaged (the reactor's order); no root.
 */
class FlinkClusterEndToEndTest {
  @Test
  void theShadedJobRunsOnAStandaloneClusterWithFlagsOnly() throws Exception {
    Path work = Files.createTempDirectory("wattgraph-flink-cluster");
    try (KafkaBroker kafka = KafkaBroker.start(work.resolve("kafka"), 0, 0);
        Neo4jServer neo4j = Neo4jServer.start(work.resolve("neo4j"), 0);
        Driver driver = GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none());
        FlinkCluster cluster = new FlinkCluster(work.resolve("flink"), List.of())) {
      String topic = "wattgraph.connections";
      kafka.createTopic(topic, 2);
      kafka.createTopic("wattgraph.resources", 2);

      // The job's jar and flags, nothing else: what the k8s manifest passes.
      cluster.submit(List.of(
          "--kafka-brokers", kafka.bootstrapServers(), "--topic", topic, "--group-id", "cluster-test",
          "--neo4j-uri", neo4j.boltUri(), "--checkpoint-dir", work.resolve("checkpoints").toUri().toString(),
          "--checkpoint-interval-ms", "1000", "--parallelism", "2", "--idleness-ms", "1000"));
      cluster.await(() -> get(cluster.rest() + "/jobs/overview").contains("\"state\":\"RUNNING\""), "the job RUNNING");

      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      p.put(ProducerConfig.ACKS_CONFIG, "all");
      try (KafkaProducer<String, byte[]> producer =
          new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
        for (ConnectionEvent e : List.of(
            event("host-a", 100, ConnectionRole.CLIENT, "10.9.0.1", 40000, "10.9.0.2", 8080, 300, 4000, 11),
            event("host-b", 200, ConnectionRole.SERVER, "10.9.0.2", 8080, "10.9.0.1", 40000, 4000, 300, 22))) {
          producer.send(new ProducerRecord<>(topic, e.getHostId().toString(), e.toByteBuffer().array())).get();
        }
        // The windows too: host-a's HOST samples, 2 CPU s and 30 J in [T0, T0 + 10 s), then one
        // 30 s later that moves the watermark past that window.
        long t0 = 1_700_000_000_000_000_000L;
        for (ResourceSample r : List.of(hostSample(t0 + 5_000_000_000L, 2_000_000_000L, 30.0),
            hostSample(t0 + 30_000_000_000L, 1_000_000_000L, 10.0))) {
          producer.send(new ProducerRecord<>("wattgraph.resources", "host-a", r.toByteBuffer().array())).get();
        }
      }
      cluster.await(() -> driver.executableQuery("MATCH (h:Host {id: 'host-a'}) WHERE h.metricsWindowEndNs = $end "
          + "AND h.cpuUsage = 0.2 AND h.powerW = 3.0 RETURN count(h)").withParameters(
              Map.of("end", 1_700_000_010_000_000_000L)).execute().records().get(0).get(0).asLong() == 1,
          "host-a's first window in the graph: 0.2 cores, 3 W");
      String edge = "MATCH (:Process {id: 'host-a/100/1000'})-[t:TALKS_TO]->(:Process {id: 'host-b/200/2000'}) "
          + "RETURN coalesce(max(t.connections * 1000000000 + t.bytesClientToServer * 100000 + t.bytesServerToClient), 0)";
      cluster.await(() -> driver.executableQuery(edge).execute().records().get(0).get(0).asLong() == 1_030_004_000L,
          "the edge host-a/100 -> host-b/200 with 1 connection, 300 and 4000 bytes");
    }
  }

  static ResourceSample hostSample(long endNs, long cpuNs, double energyJ) {
    return ResourceSample.newBuilder()
        .setScope(ResourceScope.HOST)
        .setHostId("host-a")
        .setIntervalStartNs(endNs - 5_000_000_000L)
        .setIntervalEndNs(endNs)
        .setTgid(0)
        .setProcessStartTimeNs(0)
        .setComm("")
        .setCgroupId(0)
        .setGroupId("host")
        .setRuntime(ContainerRuntime.HOST)
        .setThreads(8)
        .setProcesses(3)
        .setCpuTimeNs(cpuNs)
        .setWeightKind(AttributionWeight.CPU_TIME)
        .setWeight(cpuNs)
        .setPowerSource(PowerSource.MEASURED)
        .setPowerWatts(energyJ / 5)
        .setEnergyJoules(energyJ)
        .setIdlePowerWatts(0)
        .setUnattributedPowerWatts(0)
        .build();
  }

  static ConnectionEvent event(String host, int tgid, ConnectionRole role, String localIp, int localPort,
      String remoteIp, int remotePort, long sent, long received, long cookie) {
    return ConnectionEvent.newBuilder()
        .setKind(ConnectionEventKind.SNAPSHOT)
        .setHostId(host)
        .setEventTimeNs(1_000_000_000L)
        .setLocalAddress(IpAddresses.parse(localIp))
        .setLocalPort(localPort)
        .setRemoteAddress(IpAddresses.parse(remoteIp))
        .setRemotePort(remotePort)
        .setRole(role)
        .setPid(tgid)
        .setTgid(tgid)
        .setProcessStartTimeNs(tgid * 10L)
        .setComm("proc" + tgid)
        .setCmdline(null)
        .setContainerId(null)
        .setCgroupId(1)
        .setNetnsInode(1)
        .setSocketCookie(cookie)
        .setBytesSent(sent)
        .setBytesReceived(received)
        .build();
  }

  static String get(String url) {
    try {
      HttpResponse<String> r = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
          HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 ? r.body() : "";
    } catch (IOException e) {
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
