package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
import io.wattgraph.schema.TransactionAddress;
import io.wattgraph.schema.TransactionHistograms;
import io.wattgraph.schema.TransactionRole;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.sink.neo4j.EdgeMetricsGraphWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.avro.message.BinaryMessageEncoder;
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
 * Known latencies the whole way to the exported histograms. The records an agent would send (TransactionStats with
 * exact histograms of both ends of one connection, its ConnectionEvents, ResourceSamples) of a client process P1 on
 * host-a and a server process P2 in container C2 (pod shop-0 of namespace shop) on host-b go through local-stack's
 * Kafka, the production job (windows 1 s, in this JVM), Neo4j and the packaged graph service. Its
 * {@code /actuator/prometheus} and its OTLP pushes (to {@link OtlpReceiver}) must show, for the container, its
 * namespace and the workload edge P1 -> shop-0, the buckets, count and sum of what was sent: after two windows, and
 * again after a late revision of the first window written after the second (it replaces the first window's share).
 * The connection is sent after the windows' records, so the edge windows reach the sink before their edge and wait
 * for it. No agent, no root.
 */
class LatencyExportEndToEndTest {
  static final Path WORK = Path.of("target", "system-test-latency-export").toAbsolutePath();
  static final long S = 1_000_000_000L;
  static final long MS = 1_000_000L;
  static final long US = 1_000L;
  static final String C2 = "c2".repeat(32);
  static final int SUB_BUCKET_BITS = 7;
  static final Series CONTAINER = new Series("wattgraph.container.server.time.histogram",
      Map.of("container_id", C2, "pod", "shop-0", "namespace", "shop", "host", "host-b"));
  static final Series NAMESPACE = new Series("wattgraph.namespace.server.time.histogram", Map.of("namespace", "shop"));
  static final Series EDGE = new Series("wattgraph.edge.client.rtt.histogram",
      Map.of("target_namespace", "shop", "target_workload", "shop-0"));
  /** Also makes Avro trust the generated classes (WattgraphSchemas) before any record is encoded. */
  static final BinaryMessageEncoder<ConnectionEvent> CONNECTIONS = WattgraphSchemas.connectionEventEncoder();

  /** An exported histogram: its OTLP name (on the scrape with underscores and {@code _seconds}) and labels. */
  record Series(String otlpName, Map<String, String> labels) {
    String prometheusName() {
      return otlpName.replace('.', '_') + "_seconds";
    }
  }

  /** Durations (ns) and their counts, as one record's histogram. */
  record Latencies(long[] ns, long[] counts) {}

  @Test
  void knownLatenciesAndALateRevisionReachTheExportedHistogramsExactly() throws Exception {
    List<AutoCloseable> started = new ArrayList<>();
    long startNs = System.nanoTime();
    long wallNs = System.currentTimeMillis() * MS;
    // Recent windows (the export leaves out what ended more than 5 min ago), on whole seconds.
    long t0 = (wallNs / S - 30) * S;
    long w1 = t0 + S;
    long w2 = t0 + 2 * S;
    try {
      // Neo4j starts while the broker does.
      CompletableFuture<Neo4jServer> neo4jStarting = starting(() -> Neo4jServer.start(
          WORK.resolve("neo4j-" + System.nanoTime()), 0));
      started.add(() -> neo4jStarting.join().close());
      KafkaBroker kafka = add(started, KafkaBroker.start(WORK.resolve("kafka-" + System.nanoTime()), 0, 0));
      for (String topic : List.of("wattgraph.connections", "wattgraph.resources", "wattgraph.transactions")) {
        kafka.createTopic(topic, 1);
      }
      Neo4jServer neo4j = neo4jStarting.join();
      Driver driver = add(started, GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none()));
      // The graph service starts meanwhile (most of the test's time), exporting every second, also by OTLP.
      OtlpReceiver otlp = add(started, new OtlpReceiver());
      CompletableFuture<GraphServiceProcess> serviceStarting = starting(() -> new GraphServiceProcess(neo4j.boltUri(),
          WORK.resolve("graph-service-" + System.nanoTime()), "--wattgraph.metrics.export.refresh=1s",
          "--management.otlp.metrics.export.enabled=true", "--management.otlp.metrics.export.url=" + otlp.url(),
          "--management.otlp.metrics.export.step=1s"));
      started.add(() -> serviceStarting.join().close());
      add(started, RunningJob.start(kafka.bootstrapServers(), "wattgraph.connections", neo4j.boltUri(),
          WORK.resolve("flink-" + System.nanoTime()), "--window-ms", "1000", "--max-out-of-orderness-ms", "500",
          "--idleness-ms", "1000", "--checkpoint-interval-ms", "1000"));
      long pastSharesBefore = EdgeMetricsGraphWriter.PAST_SHARES.get();
      long waitingBefore = EdgeMetricsGraphWriter.WAITING.get();
      long withoutEdgeBefore = EdgeMetricsGraphWriter.WITHOUT_EDGE.get();
      KafkaProducer<String, byte[]> producer = add(started, producer(kafka.bootstrapServers()));
      long jobMs = elapsedMs(startNs);

      // The samples of W0 = [t0 - 1 s, t0) and of W1 = [t0, t0 + 1 s), W1's and W2's = [t0 + 1 s, t0 + 2 s) records of
      // each end, then samples that close both windows: all before the connection, so the edge windows reach the
      // graph before their TALKS_TO edge and must wait for it (issue 23: they were dropped).
      Latencies clientW1 = new Latencies(new long[] {300 * US, 2 * MS}, new long[] {20, 10});
      Latencies serverW1 = new Latencies(new long[] {100 * US, 1500 * US}, new long[] {20, 10});
      Latencies clientW2 = new Latencies(new long[] {300 * US, 5 * MS}, new long[] {3, 7});
      Latencies serverW2 = new Latencies(new long[] {100 * US, 4 * MS}, new long[] {3, 7});
      List<ProducerRecord<String, byte[]>> windows = new ArrayList<>(samples(t0 - 500 * MS));
      windows.addAll(samples(t0 + 600 * MS));
      windows.addAll(List.of(
          transactions(TransactionRole.CLIENT, t0 + 500 * MS, clientW1),
          transactions(TransactionRole.SERVER, t0 + 500 * MS, serverW1),
          transactions(TransactionRole.CLIENT, t0 + 1500 * MS, clientW2),
          transactions(TransactionRole.SERVER, t0 + 1500 * MS, serverW2)));
      windows.addAll(samples(t0 + 1500 * MS));
      windows.addAll(samples(t0 + 4 * S));
      send(producer, windows);
      await(() -> EdgeMetricsGraphWriter.WAITING.get() > waitingBefore, "an edge window waiting for its edge");
      // C2's pod before the edge: the export files an edge's growth under the workloads its ends are in when it
      // reads it (under load the samples' windows can close after the edge windows land).
      await(() -> driver.executableQuery("MATCH (c:Container {id: $c, podName: 'shop-0'}) RETURN count(c)")
          .withParameters(Map.of("c", C2)).execute().records().get(0).get(0).asLong() == 1, "C2's pod in the graph");
      long waitingMs = elapsedMs(startNs);

      // Then the connection: the waiting windows land on its edge.
      send(producer, List.of(connection(ConnectionRole.CLIENT, t0 + 200 * MS),
          connection(ConnectionRole.SERVER, t0 + 200 * MS)));

      GraphServiceProcess service = serviceStarting.join();
      long serviceMs = elapsedMs(startNs);
      awaitExported(service, otlp, CONTAINER, expected(serverW1, serverW2));
      awaitExported(service, otlp, NAMESPACE, expected(serverW1, serverW2));
      awaitExported(service, otlp, EDGE, expected(clientW1, clientW2));
      long firstMs = elapsedMs(startNs);

      // Both windows are in the graph, W2 the latest on the edge and the container: a revision of W1 now is one
      // arriving after a newer window.
      String latest = "MATCH (:Process {id: 'host-a/100/5000'})-[t:TALKS_TO]->(p:Process {id: 'host-b/200/6000'}), "
          + "(c:Container {id: $c}) RETURN t.latencyWindowEndNs = $w2 AND c.metricsWindowEndNs >= $w2";
      assertEquals(true, driver.executableQuery(latest).withParameters(Map.of("c", C2, "w2", w2)).execute()
          .records().get(0).get(0).asBoolean(), "W2 is the latest window on the edge and the container");

      // Late records of W1 (within the lateness), one per end: a revision of W1 on the edge, P2, C2 and shop.
      Latencies clientLate = new Latencies(new long[] {20 * MS}, new long[] {4});
      Latencies serverLate = new Latencies(new long[] {15 * MS}, new long[] {4});
      send(producer, List.of(transactions(TransactionRole.CLIENT, t0 + 800 * MS, clientLate),
          transactions(TransactionRole.SERVER, t0 + 800 * MS, serverLate)));
      awaitExported(service, otlp, CONTAINER, expected(serverW1, serverW2, serverLate));
      awaitExported(service, otlp, NAMESPACE, expected(serverW1, serverW2, serverLate));
      awaitExported(service, otlp, EDGE, expected(clientW1, clientW2, clientLate));
      assertEquals(List.of(w1, w2), driver.executableQuery("MATCH (:Process {id: 'host-a/100/5000'})-[t:TALKS_TO]->"
          + "(:Process {id: 'host-b/200/6000'}) WHERE t.latencyShareRevision[0] > 0 RETURN t.latencyShareWindowEndNs")
          .execute().records().get(0).get(0).asList(), "W1 revised, W2 kept on the edge");
      assertEquals(0, EdgeMetricsGraphWriter.PAST_SHARES.get() - pastSharesBefore, "no revision past the shares");
      assertEquals(0, EdgeMetricsGraphWriter.WITHOUT_EDGE.get() - withoutEdgeBefore, "no edge window dropped");
      System.out.printf("latency export: job started at %d ms, an edge window waiting for its edge at %d ms, "
          + "graph service up at %d ms, two windows exported at %d ms, the revision at %d ms%n", jobMs, waitingMs, serviceMs,
          firstMs, elapsedMs(startNs));
    } finally {
      for (int i = started.size() - 1; i >= 0; i--) {
        try {
          started.get(i).close();
        } catch (Exception e) {
          System.err.println("latency export test: closing " + started.get(i) + ": " + e);
        }
      }
    }
  }

  /** The histogram the export must show for {@code sent}: octave buckets (cumulative), count, midpoint sum. */
  static ScrapedHistogram expected(Latencies... sent) {
    long[] octaves = new long[TransactionHistograms.OCTAVE_BUCKETS];
    double sumNs = 0;
    for (Latencies l : sent) {
      for (int i = 0; i < l.ns().length; i++) {
        int bucket = TransactionHistograms.bucketOf(l.ns()[i], SUB_BUCKET_BITS);
        octaves[TransactionHistograms.octaveOf(bucket, SUB_BUCKET_BITS)] += l.counts()[i];
        sumNs += l.counts()[i] * (double) TransactionHistograms.midpoint(bucket, SUB_BUCKET_BITS);
      }
    }
    List<Double> bounds = new ArrayList<>();
    List<Long> cumulative = new ArrayList<>();
    long n = 0;
    for (int i = 0; i < octaves.length; i++) {
      bounds.add(i == octaves.length - 1 ? Double.POSITIVE_INFINITY : TransactionHistograms.octaveUpperBoundNs(i) / 1e9);
      n += octaves[i];
      cumulative.add(n);
    }
    return new ScrapedHistogram(bounds, cumulative, n, sumNs / 1e9);
  }

  /** {@link #awaitExported(String, Supplier, ScrapedHistogram)} on the scrape and on the OTLP pushes. */
  static void awaitExported(GraphServiceProcess service, OtlpReceiver otlp, Series series, ScrapedHistogram expected)
      throws InterruptedException {
    awaitExported("scraped " + series, () -> ScrapedHistogram.of(service.get("/actuator/prometheus"),
        series.prometheusName(), series.labels()), expected);
    awaitExported("pushed " + series, () -> otlp.histogram(series.otlpName(), series.labels()), expected);
  }

  /**
   * Waits until {@code exported} shows {@code expected}'s counts, then checks it: bounds and counts exactly; the sum
   * to 1e-12 (the edge's is added up from growth between refreshes, in doubles).
   */
  static void awaitExported(String what, Supplier<ScrapedHistogram> exported, ScrapedHistogram expected)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    ScrapedHistogram last = exported.get();
    while ((last == null || !last.cumulativeCounts().equals(expected.cumulativeCounts()))
        && System.nanoTime() < deadline) {
      Thread.sleep(250);
      last = exported.get();
    }
    if (last == null) {
      throw new AssertionError("no " + what);
    }
    assertEquals(expected.upperBounds(), last.upperBounds(), what);
    assertEquals(expected.cumulativeCounts(), last.cumulativeCounts(), what);
    assertEquals(expected.count(), last.count(), what);
    assertEquals(expected.sum(), last.sum(), expected.sum() * 1e-12, what);
  }

  static void await(java.util.function.BooleanSupplier done, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(100);
    }
  }

  /** Something started on another thread (closed by whoever joins it). */
  static <T> CompletableFuture<T> starting(Callable<T> start) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return start.call();
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    });
  }

  static long elapsedMs(long sinceNs) {
    return (System.nanoTime() - sinceNs) / 1_000_000;
  }

  static <T extends AutoCloseable> T add(List<AutoCloseable> started, T resource) {
    started.add(resource);
    return resource;
  }

  static KafkaProducer<String, byte[]> producer(String bootstrap) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    return new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer());
  }

  static void send(KafkaProducer<String, byte[]> producer, List<ProducerRecord<String, byte[]>> records)
      throws Exception {
    for (ProducerRecord<String, byte[]> r : records) {
      producer.send(r).get();
    }
  }

  /** One end of P1 (host-a, 10.0.0.1:40000) -> P2 (host-b, 10.0.0.2:8080, in C2), as its agent reports it. */
  static ProducerRecord<String, byte[]> connection(ConnectionRole role, long timeNs) throws IOException {
    boolean client = role == ConnectionRole.CLIENT;
    ConnectionEvent e = ConnectionEvent.newBuilder()
        .setKind(ConnectionEventKind.SNAPSHOT)
        .setHostId(client ? "host-a" : "host-b")
        .setEventTimeNs(timeNs)
        .setLocalAddress(IpAddresses.parse(client ? "10.0.0.1" : "10.0.0.2"))
        .setLocalPort(client ? 40000 : 8080)
        .setRemoteAddress(IpAddresses.parse(client ? "10.0.0.2" : "10.0.0.1"))
        .setRemotePort(client ? 8080 : 40000)
        .setRole(role)
        .setPid(client ? 100 : 200)
        .setTgid(client ? 100 : 200)
        .setProcessStartTimeNs(client ? 5000 : 6000)
        .setComm(client ? "curl" : "nginx")
        .setCmdline(null)
        .setContainerId(client ? null : C2)
        .setCgroupId(1)
        .setNetnsInode(2)
        .setSocketCookie(client ? 11 : 22)
        .setBytesSent(client ? 4000 : 40_000)
        .setBytesReceived(client ? 40_000 : 4000)
        .build();
    return new ProducerRecord<>("wattgraph.connections", e.getHostId().toString(), bytes(CONNECTIONS.encode(e)));
  }

  /** One end's TransactionStats of the connection for the 100 ms ending at {@code endNs}. */
  static ProducerRecord<String, byte[]> transactions(TransactionRole role, long endNs, Latencies latencies)
      throws IOException {
    boolean client = role == TransactionRole.CLIENT;
    Map<Integer, Long> cells = new HashMap<>();
    long n = 0;
    for (int i = 0; i < latencies.ns().length; i++) {
      cells.merge(TransactionHistograms.bucketOf(latencies.ns()[i], SUB_BUCKET_BITS), latencies.counts()[i], Long::sum);
      n += latencies.counts()[i];
    }
    TransactionHistograms.Histogram h = new TransactionHistograms.Histogram(SUB_BUCKET_BITS);
    cells.forEach((b, c) -> h.add(List.of(b), List.of(c)));
    TransactionStats.Builder b = TransactionStats.newBuilder().setHostId(client ? "host-a" : "host-b")
        .setIntervalStartNs(endNs - 100 * MS).setIntervalEndNs(endNs).setRole(role)
        .setLocalAddress(address(client ? "10.0.0.1" : "10.0.0.2")).setLocalPort(client ? 40000 : 8080)
        .setRemoteAddress(address(client ? "10.0.0.2" : "10.0.0.1")).setRemotePort(client ? 8080 : 40000)
        .setTgid(client ? 100 : 200).setProcessStartTimeNs(client ? 5000 : 6000).setComm(client ? "curl" : "nginx")
        .setCgroupId(1).setNetnsInode(2).setSocketCookie(client ? 11 : 22).setClosed(false)
        .setTransactions(n).setRequestBytes(100 * n).setResponseBytes(1000 * n).setSubBucketBits(SUB_BUCKET_BITS);
    if (client) {
      b.setClientRttBuckets(h.buckets()).setClientRttCounts(h.counts());
    } else {
      b.setServerTimeBuckets(h.buckets()).setServerTimeCounts(h.counts());
    }
    return new ProducerRecord<>("wattgraph.transactions", "10.0.0.1:40000>10.0.0.2:8080",
        bytes(TransactionStats.getEncoder().encode(b.build())));
  }

  static TransactionAddress address(String ip) {
    return new TransactionAddress(IpAddresses.parse(ip).bytes());
  }

  /** Both hosts' samples of the interval ending at {@code endNs}: P1; P2 and C2 in pod shop-0 of shop. */
  static List<ProducerRecord<String, byte[]>> samples(long endNs) throws IOException {
    ResourceSample p1 = sample(ResourceScope.PROCESS, "host-a", endNs, 100, 5000, "host", null);
    ResourceSample p2 = sample(ResourceScope.PROCESS, "host-b", endNs, 200, 6000, C2, "uid-shop-0");
    ResourceSample c2 = sample(ResourceScope.GROUP, "host-b", endNs, 0, 0, C2, "uid-shop-0");
    List<ProducerRecord<String, byte[]>> out = new ArrayList<>();
    for (ResourceSample s : List.of(p1, p2, c2)) {
      if (s.getPodUid() != null) {
        s.setPodName("shop-0");
        s.setPodNamespace("shop");
      }
      out.add(new ProducerRecord<>("wattgraph.resources", s.getHostId().toString(), bytes(ResourceSample.getEncoder().encode(s))));
    }
    return out;
  }

  static ResourceSample sample(ResourceScope scope, String host, long endNs, int tgid, long start, String group,
      String podUid) {
    return ResourceSample.newBuilder().setScope(scope).setHostId(host).setIntervalStartNs(endNs - 500 * MS)
        .setIntervalEndNs(endNs).setTgid(tgid).setProcessStartTimeNs(start).setComm(tgid == 100 ? "curl" : "nginx")
        .setCgroupId(1).setGroupId(group).setRuntime(group.equals("host") ? ContainerRuntime.HOST
            : ContainerRuntime.CONTAINERD).setPodUid(podUid).setThreads(1).setProcesses(1).setCpuTimeNs(100 * MS)
        .setWeightKind(AttributionWeight.CPU_TIME).setWeight(100 * MS).setPowerSource(PowerSource.MEASURED)
        .setPowerWatts(1.0).setEnergyJoules(0.5).setIdlePowerWatts(0).setUnattributedPowerWatts(0).build();
  }

  static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }
}
