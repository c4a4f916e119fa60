package io.wattgraph.stream.bench;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.localstack.Neo4jServer;
import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionRole;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.ServiceBackend;
import io.wattgraph.schema.ServiceMapping;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.JobConfig;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.source.Observation;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Session;

/**
 * End-to-end latency, run by hand (not a test): event produced to Kafka → visible in Neo4j.
 * <pre>
 * java ... io.wattgraph.stream.bench.EndToEndLatencyBenchmark [RATE=50000] [SECONDS=30] [PARALLELISM=1] [WARMUP=60]
 *     [WRITES=checkpointed,immediate] [CHECKPOINT_MS=5000]
 * </pre>
 * local-stack's Kafka broker and Neo4j and the real job ({@link CorrelationJob#build}, defaults,
 * live/unbounded) in one JVM. A generator produces {@link StreamJobsBenchmark.Generate}'s agent
 * events (as Avro {@code ConnectionEvent}s, keyed by connection, the VIP mapping published first)
 * at a fixed rate for a bounded time. Every 50 ms it also sends one probe: the next cumulative
 * counter of a dedicated connection (both ends, client end first), whose edge's
 * {@code bytesClientToServer} then equals the probe's number. A poller reads that edge every 10 ms;
 * a probe's latency is from sending its second end to the first poll that shows its number or more.
 * The first {@code WARMUP} seconds run at the same rate and are not measured. Each of {@code WRITES}
 * ({@code --neo4j-writes}) is measured in turn by its own job on its own topic, in the same JVM, broker
 * and Neo4j (emptied in between), and the ratios of their percentiles to the first one's are printed.
 */
public final class EndToEndLatencyBenchmark {
  static final String TOPIC = "wattgraph.connections";
  static final String PROBE_CLIENT = "probe-c/7/7000";
  static final String PROBE_SERVER = "probe-s/8/8000";

  private EndToEndLatencyBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rate = args.length > 0 ? Integer.parseInt(args[0]) : 50_000;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 30;
    int parallelism = args.length > 2 ? Integer.parseInt(args[2]) : 1;
    int warmup = args.length > 3 ? Integer.parseInt(args[3]) : 60;
    if (rate <= 0 || seconds <= 0 || parallelism <= 0 || warmup < 0) {
      throw new IllegalArgumentException(
          "RATE, SECONDS and PARALLELISM must be > 0 and WARMUP >= 0, got " + Arrays.toString(args));
    }
    System.out.printf("cores available: %d, JVM %s; target %,d events/s for %d s after %d s of warm-up, parallelism %d%n",
        Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"), rate, seconds, warmup,
        parallelism);
    List<String> modes = List.of((args.length > 4 ? args[4] : "checkpointed,immediate").split(","));
    long checkpointMs = args.length > 5 ? Long.parseLong(args[5]) : new JobConfig().checkpointIntervalMs;
    Path dir = Path.of("target", "bench", "e2e-" + System.nanoTime()).toAbsolutePath();
    Files.createDirectories(dir);
    Map<String, double[]> results = new LinkedHashMap<>();
    try (KafkaBroker kafka = KafkaBroker.start(dir.resolve("kafka"), 0, 0);
        Neo4jServer neo4j = Neo4jServer.start(dir.resolve("neo4j"), 0);
        Driver driver = GraphDatabase.driver(neo4j.boltUri(), AuthTokens.none());
        KafkaProducer<String, byte[]> producer = producer(kafka.bootstrapServers())) {
      for (String mode : modes) {
        String topic = TOPIC + "-" + mode;
        kafka.createTopic(topic, 2);
        JobConfig c = JobConfig.parse(new String[] {"--kafka-brokers", kafka.bootstrapServers(), "--neo4j-uri",
            neo4j.boltUri(), "--topic", topic, "--group-id", "e2e-" + mode, "--neo4j-writes", mode,
            "--checkpoint-interval-ms", String.valueOf(checkpointMs),
            "--checkpoint-dir", dir.resolve("checkpoints-" + mode).toUri().toString()});
        c.parallelism = parallelism;
        System.out.printf("%n== --neo4j-writes %s, checkpoints every %d ms ==%n", mode, checkpointMs);
        results.put(mode, measure(c, producer, driver, rate, seconds, warmup));
        try (Session s = driver.session()) {
          s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume();
        }
      }
    }
    System.out.printf("%n%-14s %10s %10s %10s %12s%n", "writes", "p50 ms", "p99 ms", "max ms", "p99 ratio");
    double[] base = results.values().iterator().next();
    results.forEach((mode, r) -> System.out.printf("%-14s %10.0f %10.0f %10.0f %11.2fx%n", mode, r[0], r[1], r[2],
        r[1] / base[1]));
    System.exit(0);
  }

  /** One job with {@code c}: warm-up, then measured; p50, p99 and max in ms. */
  static double[] measure(JobConfig c, KafkaProducer<String, byte[]> producer, Driver driver, int rate, int seconds,
      int warmup) throws Exception {
    double[] result = {Double.NaN, Double.NaN, Double.NaN};
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(new Configuration());
    CorrelationJob.build(env, c);
    producer.send(new ProducerRecord<>(c.serviceMappingsTopic, "10.96.0.10:80", bytes(ServiceMapping.getEncoder()
        .encode(new ServiceMapping("10.96.0.10", 80, "TCP", null, null, List.of(
            backend(0), backend(1), backend(2))))))).get();
    JobClient job = env.executeAsync("e2e-latency");
    Probes probes = new Probes(c.topic);
    Thread poller = new Thread(() -> probes.poll(driver), "poller");
    poller.setDaemon(true);
    try {
      // Warm-up: the job is running and writing once probe 1 is visible.
      long seq = probes.send(producer, 1);
      poller.start();
      while (probes.visible.get() < seq) {
        Thread.sleep(10);
      }
      probes.latenciesNs.clear();
      System.out.println("job running, first probe visible; generating");

      var generate = new StreamJobsBenchmark.Generate();
      // Warm-up at the measured rate: a cold JVM plans and compiles Neo4j's queries and Flink's
      // code paths for tens of seconds, during which writes take seconds each (measured: 3-6 s
      // per batch in the first 15 s, tens of ms after 40 s at 200 events/s).
      long[] cursor = {0, 1};
      if (warmup > 0) {
        generate(producer, probes, generate, rate, warmup, cursor);
        // Start measuring from an empty queue: what the cold job fell behind by is not the rate's.
        long drainStart = System.nanoTime();
        long drainUntil = drainStart + TimeUnit.SECONDS.toNanos(Math.max(60, 2L * warmup));
        while (probes.visible.get() < cursor[1] && System.nanoTime() < drainUntil) {
          Thread.sleep(10);
        }
        if (probes.visible.get() < cursor[1]) {
          System.out.printf("warm-up of %d s done, its backlog NOT drained after %.0f s (the job does not keep up"
              + " with this rate); measuring anyway%n", warmup, (System.nanoTime() - drainStart) / 1e9);
        } else {
          System.out.printf("warm-up of %d s done, its backlog drained in %.1f s; measuring%n", warmup,
              (System.nanoTime() - drainStart) / 1e9);
        }
      }
      long first = cursor[1] + 1;
      double sendS = generate(producer, probes, generate, rate, seconds, cursor);
      long last = cursor[1];
      long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (probes.visible.get() < last && System.nanoTime() < waitUntil) {
        Thread.sleep(10);
      }
      long total = (long) rate * seconds;
      System.out.printf("sent %,d events in %.1f s -> %,.0f events/s (target %,d/s); probes %d, visible %d%n",
          total, sendS, total / sendS, rate, last - first + 1,
          probes.latenciesNs.keySet().stream().filter(n -> n >= first).count());
      // Per 5 s of sending: steady state or a queue that grows?
      long perSlice = 5_000 / 50;
      for (long from = first; from <= last; from += perSlice) {
        long lo = from;
        long hi = Math.min(last, from + perSlice - 1);
        long[] slice = probes.latenciesNs.entrySet().stream().filter(e -> e.getKey() >= lo && e.getKey() <= hi)
            .mapToLong(Map.Entry::getValue).sorted().toArray();
        if (slice.length > 0) {
          System.out.printf("  s %3d-%3d: p50 %6.0f ms, max %6.0f ms%n", (lo - first) / 20, (hi - first + 1) / 20,
              percentile(slice, 0.50) / 1e6, slice[slice.length - 1] / 1e6);
        }
      }
      long[] l = probes.latenciesNs.entrySet().stream().filter(e -> e.getKey() >= first)
          .mapToLong(Map.Entry::getValue).sorted().toArray();
      if (l.length > 0) {
        result = new double[] {percentile(l, 0.50) / 1e6, percentile(l, 0.99) / 1e6, l[l.length - 1] / 1e6};
        System.out.printf("event -> visible in Neo4j: p50 %.0f ms, p99 %.0f ms, max %.0f ms%n", result[0], result[1],
            result[2]);
      }
    } finally {
      poller.interrupt();
      job.cancel().get(1, TimeUnit.MINUTES);
    }
    return result;
  }

  /**
   * Sends {@code rate × seconds} events paced at {@code rate}, a probe every 50 ms among them;
   * {@code cursor} = {next event index, last probe number}, carried over between calls. Returns the
   * seconds it took.
   */
  static double generate(KafkaProducer<String, byte[]> producer, Probes probes, StreamJobsBenchmark.Generate generate,
      int rate, int seconds, long[] cursor) throws java.io.IOException {
    long total = (long) rate * seconds;
    long start = System.nanoTime();
    long nextProbe = start;
    long i = 0;
    while (i < total) {
      // Everything due by now, then sleep until the next one: a busy-wait here took one of the
      // machine's two cores from the job it measures.
      long now = System.nanoTime();
      long due = Math.min(total, (now - start) * rate / 1_000_000_000L + 1);
      if (i >= due) {
        LockSupport.parkNanos(start + i * 1_000_000_000L / rate - now);
        continue;
      }
      for (; i < due; i++) {
        long index = cursor[0]++;
        ConnectionEvent e = event(generate.map(index), (int) (index % 6));
        producer.send(new ProducerRecord<>(probes.topic, key(e),
            bytes(WattgraphSchemas.connectionEventEncoder().encode(e))));
        // Within the batch: behind its rate, the generator's batch is everything due, seconds of events.
        if (System.nanoTime() >= nextProbe) {
          cursor[1] = probes.send(producer, cursor[1] + 1);
          nextProbe += 50_000_000L;
        }
      }
    }
    producer.flush();
    return (System.nanoTime() - start) / 1e9;
  }

  static long percentile(long[] sorted, double p) {
    return sorted[(int) Math.ceil(p * sorted.length) - 1];
  }

  /** Send times of the probes and their measured latencies, by probe number. */
  static final class Probes {
    /** Where the events and probes go: the measured job's topic. */
    final String topic;
    final Map<Long, Long> sentNs = new ConcurrentHashMap<>();
    final Map<Long, Long> latenciesNs = new ConcurrentHashMap<>();
    final AtomicLong visible = new AtomicLong();

    Probes(String topic) {
      this.topic = topic;
    }

    long send(KafkaProducer<String, byte[]> producer, long n) throws java.io.IOException {
      for (Role role : List.of(Role.CLIENT, Role.SERVER)) {
        Observation o = new Observation();
        o.role = role;
        o.hostId = role == Role.CLIENT ? "probe-c" : "probe-s";
        o.tgid = role == Role.CLIENT ? 7 : 8;
        o.processStartTimeNs = o.tgid * 1000L;
        o.comm = "probe";
        o.localIp = role == Role.CLIENT ? "10.30.0.1" : "10.30.0.2";
        o.localPort = role == Role.CLIENT ? 40000 : 7000;
        o.remoteIp = role == Role.CLIENT ? "10.30.0.2" : "10.30.0.1";
        o.remotePort = role == Role.CLIENT ? 7000 : 40000;
        o.socketCookie = o.tgid;
        o.bytesSent = role == Role.CLIENT ? n : 0;
        o.bytesReceived = role == Role.CLIENT ? 0 : n;
        o.eventTimeNs = System.currentTimeMillis() * 1_000_000L;
        ConnectionEvent e = event(o, 2);
        producer.send(new ProducerRecord<>(topic, key(e), bytes(WattgraphSchemas.connectionEventEncoder().encode(e))));
      }
      sentNs.put(n, System.nanoTime());
      return n;
    }

    void poll(Driver driver) {
      try (Session s = driver.session()) {
        while (true) {
          long now;
          long v = s.executeRead(tx -> {
            var r = tx.run("MATCH (:Process {id: $c})-[t:TALKS_TO]->(:Process {id: $s}) RETURN t.bytesClientToServer",
                Map.of("c", PROBE_CLIENT, "s", PROBE_SERVER)).list();
            return r.isEmpty() ? 0L : r.get(0).get(0).asLong();
          });
          now = System.nanoTime();
          for (long n = visible.get() + 1; n <= v; n++) {
            Long sent = sentNs.get(n);
            if (sent != null) {
              latenciesNs.put(n, now - sent);
            }
          }
          visible.accumulateAndGet(v, Math::max);
          Thread.sleep(10);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  static ServiceBackend backend(int host) {
    return new ServiceBackend(StreamJobsBenchmark.Generate.ip(host), 9000, null);
  }

  /** The agent's record of an observation; step 0-1 OPENED, 2-3 SNAPSHOT, 4-5 CLOSED, as the generator orders them. */
  static ConnectionEvent event(Observation o, int step) {
    return ConnectionEvent.newBuilder()
        .setKind(step < 2 ? ConnectionEventKind.OPENED : step < 4 ? ConnectionEventKind.SNAPSHOT : ConnectionEventKind.CLOSED)
        .setHostId(o.hostId)
        .setEventTimeNs(o.eventTimeNs)
        .setLocalAddress(IpAddresses.parse(o.localIp))
        .setLocalPort(o.localPort)
        .setRemoteAddress(IpAddresses.parse(o.remoteIp))
        .setRemotePort(o.remotePort)
        .setRole(o.role == Role.CLIENT ? ConnectionRole.CLIENT : ConnectionRole.SERVER)
        .setPid(o.tgid)
        .setTgid(o.tgid)
        .setProcessStartTimeNs(o.processStartTimeNs)
        .setComm(o.comm)
        .setCmdline(o.cmdline)
        .setCgroupId(o.cgroupId)
        .setContainerId(o.containerId)
        .setNetnsInode(4026531840L)
        .setSocketCookie(o.socketCookie)
        .setBytesSent(o.bytesSent)
        .setBytesReceived(o.bytesReceived)
        .build();
  }

  /** contracts.md: clientIp:clientPort>serverIp:serverPort, as the agent keys its records. */
  static String key(ConnectionEvent e) {
    String local = IpAddresses.format(e.getLocalAddress()) + ":" + e.getLocalPort();
    String remote = IpAddresses.format(e.getRemoteAddress()) + ":" + e.getRemotePort();
    return e.getRole() == ConnectionRole.SERVER ? remote + ">" + local : local + ">" + remote;
  }

  static KafkaProducer<String, byte[]> producer(String brokers) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
    p.put(ProducerConfig.ACKS_CONFIG, "1");
    p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
    return new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer());
  }

  static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }
}
