package io.wattgraph.stream.bench;

import io.wattgraph.localstack.Neo4jServer;
import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.JobConfig;
import io.wattgraph.stream.PodMetadata;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.ServiceMappingUpdate;
import io.wattgraph.stream.Sources;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.connection.EdgeRow;
import io.wattgraph.stream.connection.GraphNode;
import io.wattgraph.stream.sink.neo4j.ConnectionGraphWriter;
import io.wattgraph.stream.sink.neo4j.Neo4jSettings;
import io.wattgraph.stream.source.Decoded;
import io.wattgraph.stream.source.Observation;
import io.wattgraph.stream.source.RecordIds;
import io.wattgraph.stream.source.Sample;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * Throughput of the stream job, run by hand (not a test):
 * <pre>
 * mvn -o -q -pl stream-jobs test-compile dependency:build-classpath -Dmdep.includeScope=test \
 *     -Dmdep.outputFile=target/bench-classpath.txt
 * java -cp stream-jobs/target/test-classes:stream-jobs/target/classes:$(cat stream-jobs/target/bench-classpath.txt) \
 *     io.wattgraph.stream.bench.StreamJobsBenchmark [EVENTS] [NEO4J_ROWS (0: no Neo4j part)] [BATCH_SIZES=500,2000,5000]
 *     [ROUNDS=3] [WRITERS=1,2]
 * </pre>
 * 1. Throughput, three jobs of EVENTS events each ({@link Mix}) in a local MiniCluster at
 *    parallelism 1, into discarding sinks: correlation (generated agent connection events through
 *    exactly the job's core, {@link CorrelationJob#correlate}: VIP resolver, correlator, edge
 *    aggregator); windows (generated ResourceSamples and TransactionStats through exactly
 *    {@link CorrelationJob#windows}); both in one job. Reports events/s of wall time and events
 *    per CPU-second of the whole process (that is "per core").
 * 2. Neo4j: {@link ConnectionGraphWriter} batches of edge rows into a local Neo4j over Bolt, first as new
 *    edges (node and relationship creation), then the same edges again (updates), each pass in a
 *    fresh store. One unreported pass per batch size first (JIT of Neo4j, Cypher planning), then
 *    ROUNDS rounds that alternate the batch sizes, so they compare side by side under the same
 *    machine load; medians per size at the end. WRITERS: concurrent writers, each with its own
 *    driver and its share of the rows by edge key, as the job's sink subtasks at that parallelism
 *    get them. EVENTS 0 skips 1.
 * 3. With {@code -Dwattgraph.bench.skewParallelism=P}, only: the windows part at parallelism P
 *    with the TransactionStats spread over 1,000 server processes, then all on one (a hot
 *    service), alternated over ROUNDS, and their ratio.
 *
 * <p>Long on purpose: the generators of realistic agent records and the four measured parts share
 * one file, so a run is one class to read.
 */
public final class StreamJobsBenchmark {
  static final int HOSTS = 50;
  static final int PROCS_PER_HOST = 20;

  private StreamJobsBenchmark() {}

  public static void main(String[] args) throws Exception {
    long events = args.length > 0 ? Long.parseLong(args[0]) : 3_000_000L;
    int rows = args.length > 1 ? Integer.parseInt(args[1]) : 40_000;
    String batchSizes = args.length > 2 ? args[2] : "500,2000,5000";
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    String writers = args.length > 4 ? args[4] : "1,2";
    System.out.printf("cores available: %d, JVM %s%n", Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"));
    int skewParallelism = Integer.getInteger("wattgraph.bench.skewParallelism", 0);
    if (skewParallelism > 0) {
      skewRounds(events, skewParallelism, rounds);
      System.exit(0);
    }
    if (events > 0) {
      run(Math.min(events, 200_000), "warm-up", Mix.CORRELATION);
      run(Math.min(events, 200_000), "warm-up", Mix.WINDOWS);
      run(events, "measured", Mix.CORRELATION);
      run(events, "measured", Mix.WINDOWS);
      run(events, "measured", Mix.BOTH);
    }
    if (rows > 0) {
      neo4jRounds(rows, batchSizes, writers, rounds);
    }
    System.exit(0);
  }

  /**
   * Event i belongs to connection i / 6, in the order an agent pair produces them: client OPENED,
   * server OPENED, client SNAPSHOT, server SNAPSHOT, client CLOSED, server CLOSED. 50 hosts with 20
   * processes each; every client process talks to 5 server processes on other hosts; client ports
   * cycle through 50,000 ephemeral ports (so 4-tuples get reused, as on real hosts); every tenth
   * connection dials a service VIP with 3 backends.
   */
  static final class Generate implements MapFunction<Long, Observation> {
    private static final long serialVersionUID = 1L;

    @Override
    public Observation map(Long i) {
      long c = i / 6;
      int step = (int) (i % 6);
      int clientProc = (int) (c % (HOSTS * PROCS_PER_HOST));
      int clientHost = clientProc / PROCS_PER_HOST;
      int serverHost = (clientHost + 1 + (int) (c % 5)) % HOSTS;
      int serverProc = serverHost * PROCS_PER_HOST + (int) (c % 3);
      boolean viaVip = c % 10 == 0;
      int backend = (int) (c % 3);
      String clientIp = ip(clientHost);
      String serverIp = viaVip ? ip(backend) : ip(serverHost);
      int serverPort = viaVip ? 9000 : 8000 + serverProc % PROCS_PER_HOST;
      int clientPort = 10_000 + (int) ((c / (HOSTS * PROCS_PER_HOST)) % 50_000);
      boolean clientSide = step % 2 == 0;
      long bytes = (step / 2 + 1) * (1000 + c % 4096);
      Observation o = new Observation();
      o.eventTimeNs = BASE_NS + i * 1000;
      o.closed = step >= 4;
      o.socketCookie = c * 2 + (clientSide ? 0 : 1);
      if (clientSide) {
        o.hostId = "host-" + clientHost;
        o.role = Role.CLIENT;
        o.localIp = clientIp;
        o.localPort = clientPort;
        o.remoteIp = viaVip ? "10.96.0.10" : serverIp;
        o.remotePort = viaVip ? 80 : serverPort;
        o.tgid = 1000 + clientProc;
        o.bytesSent = bytes;
        o.bytesReceived = bytes * 3;
      } else {
        int proc = viaVip ? backend * PROCS_PER_HOST : serverProc;
        o.hostId = "host-" + (viaVip ? backend : serverHost);
        o.role = Role.SERVER;
        o.localIp = serverIp;
        o.localPort = serverPort;
        o.remoteIp = clientIp;
        o.remotePort = clientPort;
        o.tgid = 1000 + proc;
        o.bytesSent = bytes * 3;
        o.bytesReceived = bytes;
      }
      o.processStartTimeNs = o.tgid * 1_000_000L;
      o.comm = "proc" + o.tgid;
      o.cmdline = "/usr/bin/proc" + o.tgid + " --serve";
      o.cgroupId = 4242;
      return o;
    }

    static String ip(int host) {
      return "10.20." + (host / 250) + "." + (host % 250 + 1);
    }
  }

  /**
   * What a run feeds, per host and second of event time (the agent's default intervals of 1 s):
   * 10 new connections (60 connection events, both ends), 25 ResourceSamples (20 PROCESS, 4 GROUP,
   * 1 HOST) and 40 TransactionStats (20 keep-alive connections, both ends).
   */
  enum Mix {
    CORRELATION(1, 0, 0), WINDOWS(0, 25, 40), BOTH(60, 25, 40);

    final int connectionEvents;
    final int samples;
    final int transactions;

    Mix(int connectionEvents, int samples, int transactions) {
      this.connectionEvents = connectionEvents;
      this.samples = samples;
      this.transactions = transactions;
    }

    long share(long events, int part) {
      return events * part / (connectionEvents + samples + transactions);
    }
  }

  /**
   * One job: connection events through {@link CorrelationJob#correlate}, ResourceSamples and
   * TransactionStats through {@link CorrelationJob#windows} (default window, lateness and
   * out-of-orderness, watermarks as the job's sources assign them), results into discarding sinks.
   */
  static void run(long events, String label, Mix mix) throws Exception {
    run(events, label, mix, 1, false);
  }

  /**
   * The windows part at {@code parallelism}, with the TransactionStats spread over 1,000 server
   * processes or all on one ({@code hot}), alternated over rounds: what one hot service costs.
   */
  static void skewRounds(long events, int parallelism, int rounds) throws Exception {
    run(Math.min(events, 200_000), "warm-up", Mix.WINDOWS, parallelism, false);
    double[] uniform = new double[2];
    double[] hot = new double[2];
    for (int r = 0; r < rounds; r++) {
      double[] u = run(events, "uniform", Mix.WINDOWS, parallelism, false);
      double[] h = run(events, "hot", Mix.WINDOWS, parallelism, true);
      for (int i = 0; i < 2; i++) {
        uniform[i] += u[i];
        hot[i] += h[i];
      }
    }
    System.out.printf("parallelism %d, %d rounds: hot/uniform events/s (wall) %.3f, events per CPU-second %.3f%n",
        parallelism, rounds, hot[0] / uniform[0], hot[1] / uniform[1]);
  }

  /** Returns {events/s of wall time, events per CPU-second}. */
  static double[] run(long events, String label, Mix mix, int parallelism, boolean hot) throws Exception {
    Configuration conf = new Configuration();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
    JobConfig config = new JobConfig();
    DataStream<ServiceMappingUpdate> mappings = env.fromData(
        List.of(service("10.96.0.10:80", Generate.ip(0) + ":9000", Generate.ip(1) + ":9000", Generate.ip(2) + ":9000")),
        TypeInformation.of(ServiceMappingUpdate.class));
    long connectionEvents = mix.share(events, mix.connectionEvents);
    long samples = mix.share(events, mix.samples);
    long transactions = mix.share(events, mix.transactions);
    if (connectionEvents > 0) {
      DataStream<Observation> observations = env.fromSequence(0, connectionEvents - 1)
          .map(new Generate()).returns(TypeInformation.of(Observation.class)).name("generate");
      CorrelationJob.connectionGraph(observations, mappings, config).sinkTo(new DiscardingSink<>());
    }
    if (samples > 0) {
      DataStream<Decoded<Sample>> decodedSamples = env.fromSequence(0, samples - 1)
          .map(new GenerateSamples()).returns(TypeInformation.of(new TypeHint<Decoded<Sample>>() {})).name("generate samples")
          .assignTimestampsAndWatermarks(Sources.sampleWatermarks(config));
      DataStream<Decoded<Transaction>> decodedTransactions = env.fromSequence(0, transactions - 1)
          .map(new GenerateTransactions(hot)).returns(TypeInformation.of(new TypeHint<Decoded<Transaction>>() {}))
          .name("generate transactions")
          .assignTimestampsAndWatermarks(Sources.transactionWatermarks(config));
      CorrelationJob.Windows results = CorrelationJob.windows(decodedSamples, decodedTransactions, mappings,
          config, UnaryOperator.identity());
      results.entities().sinkTo(new DiscardingSink<>());
      results.namespaces().sinkTo(new DiscardingSink<>());
      results.edges().sinkTo(new DiscardingSink<>());
    }
    var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long cpu0 = os.getProcessCpuTime();
    long t0 = System.nanoTime();
    JobExecutionResult r = env.execute("benchmark " + label);
    double wall = (System.nanoTime() - t0) / 1e9;
    double cpu = (os.getProcessCpuTime() - cpu0) / 1e9;
    long total = connectionEvents + samples + transactions;
    System.out.printf("%-11s %-8s %,d events (%,d connection events, %,d samples, %,d transaction stats): wall %.1f s "
            + "(job net %.1f s), process CPU %.1f s -> %,.0f events/s, %,.0f events per CPU-second%n",
        mix.name().toLowerCase(java.util.Locale.ROOT), label, total, connectionEvents, samples, transactions, wall,
        r.getNetRuntime() / 1000.0, cpu, total / wall, total / cpu);
    return new double[] {total / wall, total / cpu};
  }

  static final long BASE_NS = 1_700_000_000_000_000_000L;
  static final int PODS_PER_HOST = 4;

  /**
   * Sample j: per 1 s interval and host, 20 PROCESS samples (the processes of {@link Generate}),
   * 4 GROUP samples (pods of 5 processes each, in 2 namespaces) and 1 HOST sample.
   */
  static final class GenerateSamples implements MapFunction<Long, Decoded<Sample>> {
    private static final long serialVersionUID = 1L;
    static final int PER_HOST = PROCS_PER_HOST + PODS_PER_HOST + 1;

    @Override
    public Decoded<Sample> map(Long j) {
      long interval = j / (HOSTS * PER_HOST);
      int host = (int) (j % (HOSTS * PER_HOST)) / PER_HOST;
      int slot = (int) (j % PER_HOST);
      Sample s = new Sample();
      s.recordId = recordId(j, 150);
      s.hostId = "host-" + host;
      s.intervalEndNs = BASE_NS + (interval + 1) * 1_000_000_000L;
      s.intervalStartNs = s.intervalEndNs - 1_000_000_000L;
      s.hostCores = 16;
      s.measured = true;
      if (slot < PROCS_PER_HOST) {
        int pod = slot % PODS_PER_HOST;
        s.scope = "PROCESS";
        s.tgid = 1000 + host * PROCS_PER_HOST + slot;
        s.processStartTimeNs = s.tgid * 1_000_000L;
        s.comm = "proc" + s.tgid;
        s.groupId = group(host, pod);
        s.podUid = podUid(host, pod);
        s.pod = pod(host, pod);
        s.threads = 8;
        s.processes = 1;
        s.cpuTimeNs = 50_000_000L + (j % 7) * 10_000_000L;
        s.energyJoules = s.cpuTimeNs / 1e8;
      } else if (slot < PROCS_PER_HOST + PODS_PER_HOST) {
        int pod = slot - PROCS_PER_HOST;
        s.scope = "GROUP";
        s.groupId = group(host, pod);
        s.podUid = podUid(host, pod);
        s.pod = pod(host, pod);
        s.threads = 40;
        s.processes = 5;
        s.cpuTimeNs = 300_000_000L;
        s.energyJoules = 3;
      } else {
        s.scope = "HOST";
        s.groupId = "host";
        s.cpuTimeNs = 1_500_000_000L;
        s.energyJoules = 120;
        s.idlePowerWatts = 60;
      }
      return Decoded.ok(s);
    }

    static String group(int host, int pod) {
      return "cri-" + host + "-" + pod;
    }

    static String podUid(int host, int pod) {
      return "uid-" + host + "-" + pod;
    }

    static PodMetadata pod(int host, int pod) {
      PodMetadata m = new PodMetadata();
      m.name = "pod-" + host + "-" + pod;
      m.namespace = "ns-" + pod % 2;
      m.labels = new String[] {"app=app-" + pod};
      return m;
    }
  }

  /**
   * Record j: per 1 s interval, each of the 1,000 processes keeps one connection to a process on
   * the next host, reported by both ends (client round-trip and server time histograms of 8
   * buckets, 100 transactions).
   */
  static final class GenerateTransactions implements MapFunction<Long, Decoded<Transaction>> {
    private static final long serialVersionUID = 1L;
    static final int PER_INTERVAL = HOSTS * PROCS_PER_HOST * 2;
    /** Every connection's server is one process (host 1's first): one hot service. */
    private final boolean hot;

    GenerateTransactions(boolean hot) {
      this.hot = hot;
    }

    @Override
    public Decoded<Transaction> map(Long j) {
      long interval = j / PER_INTERVAL;
      int conn = (int) (j % PER_INTERVAL) / 2;
      boolean client = j % 2 == 0;
      int clientHost = conn / PROCS_PER_HOST;
      int serverHost = hot ? 1 : (clientHost + 1) % HOSTS;
      int serverProc = serverHost * PROCS_PER_HOST + (hot ? 0 : conn % PROCS_PER_HOST);
      String clientIp = Generate.ip(clientHost);
      int clientPort = 40_000 + conn % PROCS_PER_HOST;
      String serverIp = Generate.ip(serverHost);
      int serverPort = 8000 + serverProc % PROCS_PER_HOST;
      Transaction t = new Transaction();
      t.hostId = "host-" + (client ? clientHost : serverHost);
      t.intervalEndNs = BASE_NS + (interval + 1) * 1_000_000_000L;
      t.intervalStartNs = t.intervalEndNs - 1_000_000_000L;
      t.role = client ? "CLIENT" : "SERVER";
      t.localIp = client ? clientIp : serverIp;
      t.localPort = client ? clientPort : serverPort;
      t.remoteIp = client ? serverIp : clientIp;
      t.remotePort = client ? serverPort : clientPort;
      t.tgid = 1000 + (client ? conn : serverProc);
      t.processStartTimeNs = t.tgid * 1_000_000L;
      t.comm = "proc" + t.tgid;
      t.transactions = 100;
      t.requestBytes = 100 * 300;
      t.responseBytes = 100 * 2_000;
      t.subBucketBits = 7;
      int base = client ? 1_300 : 1_100;
      t.buckets = new int[] {base, base + 3, base + 9, base + 20, base + 41, base + 80, base + 130, base + 200};
      t.counts = new long[] {30, 25, 15, 10, 8, 6, 4, 2};
      t.recordId = recordId(j, 250);
      return Decoded.ok(t);
    }
  }

  /**
   * As the deserializers give it: the hash of a record's bytes (here {@code size} bytes, about an
   * encoded record's, holding its index), so the benchmark pays for hashing and for the duplicate sets.
   */
  static long recordId(long j, int size) {
    String mode = System.getProperty("wattgraph.bench.recordIds", "hash");
    if (mode.equals("none")) {
      return 0;
    }
    if (mode.equals("mix")) {
      long z = (j + 0x9E3779B97F4A7C15L) * 0xBF58476D1CE4E5B9L;
      return (z ^ (z >>> 31)) | 1;
    }
    byte[] value = new byte[size];
    for (int i = 0; i < 8; i++) {
      value[i] = (byte) (j >>> (8 * i));
    }
    return RecordIds.of(value);
  }

  static ServiceMappingUpdate service(String vip, String... backends) {
    ServiceMappingUpdate u = new ServiceMappingUpdate();
    u.vipEndpoint = vip;
    u.backends = backends;
    return u;
  }

  /** Upserts per second of one pass: {create, update}. */
  record Pass(double creates, double updates) {}

  /** One benchmarked configuration: rows per transaction, concurrent writers. */
  record Setup(int batch, int writers) {
    @Override
    public String toString() {
      return "batches of " + batch + ", " + writers + " writer" + (writers > 1 ? "s" : "");
    }
  }

  static void neo4jRounds(int rows, String batchSizes, String writerCounts, int rounds) throws Exception {
    List<Setup> setups = new ArrayList<>();
    for (String w : writerCounts.split(",")) {
      for (String b : batchSizes.split(",")) {
        setups.add(new Setup(Integer.parseInt(b.trim()), Integer.parseInt(w.trim())));
      }
    }
    for (Setup setup : setups) {
      neo4j(rows, setup, "warm-up");
    }
    Map<Setup, List<Pass>> passes = new LinkedHashMap<>();
    for (int round = 1; round <= rounds; round++) {
      for (Setup setup : setups) {
        passes.computeIfAbsent(setup, k -> new ArrayList<>()).add(neo4j(rows, setup, "round " + round));
      }
    }
    for (Map.Entry<Setup, List<Pass>> e : passes.entrySet()) {
      System.out.printf("neo4j median of %d rounds, %s: %,.0f creates/s, %,.0f updates/s%n",
          e.getValue().size(), e.getKey(), median(e.getValue(), Pass::creates), median(e.getValue(), Pass::updates));
    }
  }

  static double median(List<Pass> passes, java.util.function.ToDoubleFunction<Pass> f) {
    double[] v = passes.stream().mapToDouble(f).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  static Pass neo4j(int rows, Setup setup, String label) throws Exception {
    Path dir = Path.of("target", "bench", "neo4j-" + System.nanoTime()).toAbsolutePath();
    Files.createDirectories(dir);
    List<ConnectionGraphWriter> graphs = new ArrayList<>();
    try (Neo4jServer server = Neo4jServer.start(dir, 0)) {
      for (int w = 0; w < setup.writers(); w++) {
        graphs.add(new ConnectionGraphWriter(new Neo4jSettings(server.boltUri(), null, null, setup.batch(), 200)));
      }
      graphs.get(0).createConstraints();
      List<List<EdgeRow>> created = new ArrayList<>();
      List<List<EdgeRow>> updated = new ArrayList<>();
      for (int w = 0; w < setup.writers(); w++) {
        created.add(new ArrayList<>());
        updated.add(new ArrayList<>());
      }
      for (int i = 0; i < rows; i++) {
        EdgeRow row = row(i, 1);
        int w = Math.floorMod(row.edgeKey.hashCode(), setup.writers());
        created.get(w).add(row);
        updated.get(w).add(row(i, 2));
      }
      double creates = write(graphs, created, label + " create", setup);
      double updates = write(graphs, updated, label + " update", setup);
      return new Pass(creates, updates);
    } finally {
      for (ConnectionGraphWriter g : graphs) {
        g.close();
      }
      try (var paths = Files.walk(dir)) {
        paths.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  /** Each writer writes its share in batches on a thread of its own; upserts/s of all together. */
  static double write(List<ConnectionGraphWriter> graphs, List<List<EdgeRow>> shares, String label, Setup setup)
      throws Exception {
    int batch = setup.batch();
    List<Thread> threads = new ArrayList<>();
    List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    long t0 = System.nanoTime();
    for (int w = 0; w < graphs.size(); w++) {
      ConnectionGraphWriter graph = graphs.get(w);
      List<EdgeRow> rows = shares.get(w);
      Thread t = new Thread(() -> {
        for (int i = 0; i < rows.size(); i += batch) {
          graph.write(rows.subList(i, Math.min(rows.size(), i + batch)));
        }
      }, "bench-writer-" + w);
      t.setUncaughtExceptionHandler((th, e) -> failures.add(e));
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      t.join();
    }
    if (!failures.isEmpty()) {
      throw new IllegalStateException("a writer failed", failures.get(0));
    }
    double s = (System.nanoTime() - t0) / 1e9;
    int total = shares.stream().mapToInt(List::size).sum();
    System.out.printf("neo4j %-14s %,d edge rows, %s: %.1f s -> %,.0f edge upserts/s%n",
        label, total, setup, s, total / s);
    return total / s;
  }

  /** Edge i between two of 2,000 processes on 100 hosts (each process has ~40 edges). */
  static EdgeRow row(int i, int generation) {
    EdgeRow r = new EdgeRow();
    r.client = process(i % 2000);
    r.server = process((i * 7 + i / 2000 + 1) % 2000);
    r.edgeKey = "P:" + r.client.id + ">P:" + r.server.id + "#" + i;
    r.bytesClientToServer = 1000L * generation + i;
    r.bytesServerToClient = 3000L * generation + i;
    r.connections = generation;
    r.firstSeenNs = 1;
    r.lastSeenNs = 1L + generation;
    return r;
  }

  static GraphNode process(int p) {
    GraphNode n = new GraphNode();
    n.kind = GraphNode.Kind.PROCESS;
    n.hostId = "bench-host-" + (p / 20);
    n.pid = 1000 + p;
    n.startTimeNs = p;
    n.comm = "proc" + p;
    n.cmdline = "/usr/bin/proc" + p;
    n.cgroupId = 1;
    n.id = n.hostId + "/" + n.pid + "/" + n.startTimeNs;
    return n;
  }
}
