package io.wattgraph.system.bench;

import io.wattgraph.localstack.KafkaBroker;
import io.wattgraph.schema.TransactionHistograms;
import io.wattgraph.schema.TransactionRole;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.schema.WattgraphSchemas;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Latency accuracy of the agent against wrk, run by hand through
 * node-agent/bench/latency_accuracy.sh, not part of the test suite.
 *
 * <p>One run: a real Kafka broker (local-stack), nginx (Debian package) on loopback, the real agent,
 * then for each scenario {@code wrk --latency} against its own nginx port at a low, a middle, a
 * ~10,000 requests/s and a high request rate. The agent's TransactionStats records of that wrk process (role CLIENT) and of
 * nginx on that port (role SERVER) are read back from Kafka, their histograms merged exactly, and
 * the client-side p50/p75/p90/p99 compared with wrk's own; the request counts with wrk's count; the
 * server time with the client round trip; and the agent's own CPU over the wrk run (its threads'
 * schedstat, the agent running as deployed: resources sampled too). Prints one table; exits 1 if a
 * scenario saw no data.
 *
 * <p>Arguments: AGENT_BINARY WORK_DIR [SECONDS_PER_SCENARIO=10].
 */
public final class LatencyAccuracyBenchmark {
  private static final String TOPIC = "wattgraph.transactions";
  private static final int BASE_PORT = 18480;
  private static final double[] QS = {0.50, 0.75, 0.90, 0.99};

  /** wrk connections, and the delay in ms wrk waits before each request (0 = as fast as it can). */
  private record Scenario(String name, int connections, int delayMs) {}

  private static final List<Scenario> SCENARIOS = List.of(
      new Scenario("low (1 conn, 10 ms think time)", 1, 10),
      new Scenario("middle (4 conns, 1 ms think time)", 4, 1),
      new Scenario("10k/s (12 conns, 1 ms think time)", 12, 1),
      new Scenario("high (16 conns, no think time)", 16, 0));

  private record WrkResult(long requests, double seconds, long[] percentileNs) {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: LatencyAccuracyBenchmark AGENT_BINARY WORK_DIR [SECONDS_PER_SCENARIO]");
      System.exit(2);
    }
    Path agentBin = Path.of(args[0]);
    Path work = Path.of(args[1]).toAbsolutePath();
    int seconds = args.length > 2 ? Integer.parseInt(args[2]) : 10;
    Files.createDirectories(work);
    List<AutoCloseable> stop = new ArrayList<>();
    int exit = 0;
    try (KafkaBroker kafka = KafkaBroker.start(work.resolve("kafka-" + System.nanoTime()), 0, 0)) {
      kafka.createTopic(TOPIC, 1);
      kafka.createTopic("wattgraph.connections", 1);
      Process nginx = startNginx(work);
      stop.add(() -> stopProcess(nginx));
      Process agent = startAgent(agentBin, kafka.bootstrapServers(), work);
      stop.add(() -> stopProcess(agent));
      StringBuilder table = new StringBuilder();
      table.append(String.format(Locale.ROOT, "%-36s %9s %9s %7s | %-29s | %-29s | %s%n", "scenario", "wrk req/s",
          "agent txn", "count", "wrk p50/p75/p90/p99 (us)", "agent client-side (us)", "rel. error p50/p75/p90/p99"));
      for (int i = 0; i < SCENARIOS.size(); i++) {
        Scenario s = SCENARIOS.get(i);
        int port = BASE_PORT + i;
        long cpu0 = cpuNs(agent.pid());
        long t0 = System.nanoTime();
        Process wrk = wrk(work, s, port, seconds);
        long wrkPid = wrk.pid();
        String out = new String(wrk.getInputStream().readAllBytes());
        if (!wrk.waitFor(seconds + 30L, TimeUnit.SECONDS) || wrk.exitValue() != 0) {
          throw new IllegalStateException("wrk failed for " + s + ":\n" + out);
        }
        double agentMillicores = 1000.0 * (cpuNs(agent.pid()) - cpu0) / (System.nanoTime() - t0);
        WrkResult w = parseWrk(out);
        Merged m = awaitAgent(kafka.bootstrapServers(), wrkPid, port, w.requests());
        if (m.client.total() == 0) {
          System.err.println("no client-side transactions of wrk (pid " + wrkPid + ") for " + s.name());
          exit = 1;
        }
        StringBuilder wrkCol = new StringBuilder();
        StringBuilder agentCol = new StringBuilder();
        StringBuilder errCol = new StringBuilder();
        for (int q = 0; q < QS.length; q++) {
          long a = m.client.percentile(QS[q]);
          long b = w.percentileNs()[q];
          wrkCol.append(q == 0 ? "" : "/").append(us(b));
          agentCol.append(q == 0 ? "" : "/").append(us(a));
          errCol.append(q == 0 ? "" : " / ").append(String.format(Locale.ROOT, "%+.1f%%", 100.0 * (a - b) / b));
        }
        table.append(String.format(Locale.ROOT, "%-36s %9.0f %9d %+6.2f%% | %-29s | %-29s | %s%n", s.name(),
            w.requests() / w.seconds(), m.client.total(), 100.0 * (m.client.total() - w.requests()) / w.requests(),
            wrkCol, agentCol, errCol));
        table.append(String.format(Locale.ROOT, "%-36s server time p50/p99 %s/%s us (%d txn); client minus server p50 %s us; agent CPU %.1f millicores%n",
            "", us(m.server.percentile(0.5)), us(m.server.percentile(0.99)), m.server.total(),
            us(m.client.percentile(0.5) - m.server.percentile(0.5)), agentMillicores));
        // Server side against client side: counts (the same transactions seen from both ends) as
        // a relative error, and each server-time percentile relative to the client round trip's.
        StringBuilder share = new StringBuilder();
        for (int q = 0; q < QS.length; q++) {
          long c = m.client.percentile(QS[q]);
          share.append(q == 0 ? "" : " / ").append(String.format(Locale.ROOT, "%.1f%%",
              c == 0 ? 0.0 : 100.0 * m.server.percentile(QS[q]) / c));
        }
        table.append(String.format(Locale.ROOT, "%-36s server vs client: count %+.2f%%; server time / client RTT at p50/p75/p90/p99 %s%n",
            "", m.client.total() == 0 ? 0.0 : 100.0 * (m.server.total() - m.client.total()) / m.client.total(), share));
      }
      System.out.print(table);
    } finally {
      for (int i = stop.size() - 1; i >= 0; i--) {
        stop.get(i).close();
      }
    }
    System.exit(exit);
  }

  /** On-CPU ns of all threads of a process (first field of each thread's schedstat). */
  static long cpuNs(long pid) throws IOException {
    long sum = 0;
    try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
      for (Path t : (Iterable<Path>) tasks::iterator) {
        try {
          sum += Long.parseLong(Files.readString(t.resolve("schedstat")).trim().split("\\s+")[0]);
        } catch (IOException e) {
          // the thread exited between the listing and the read: its time is gone with it
        }
      }
    }
    return sum;
  }

  private static String us(long ns) {
    return String.format(Locale.ROOT, "%.0f", ns / 1000.0);
  }

  private static Process startNginx(Path work) throws Exception {
    Path dir = work.resolve("nginx");
    Files.createDirectories(dir.resolve("logs"));
    StringBuilder servers = new StringBuilder();
    for (int i = 0; i < SCENARIOS.size(); i++) {
      servers.append("  server { listen 127.0.0.1:").append(BASE_PORT + i)
          .append("; location / { return 200 \"ok\\n\"; } }\n");
    }
    String conf = "daemon off;\nworker_processes 1;\npid " + dir.resolve("nginx.pid") + ";\n"
        + "error_log " + dir.resolve("logs/error.log") + " warn;\n"
        + "events { worker_connections 1024; }\n"
        + "http {\n  access_log off;\n  keepalive_requests 1000000;\n"
        + "  client_body_temp_path " + dir + "/body; proxy_temp_path " + dir + "/proxy;\n"
        + "  fastcgi_temp_path " + dir + "/fcgi; uwsgi_temp_path " + dir + "/uwsgi; scgi_temp_path " + dir + "/scgi;\n"
        + servers + "}\n";
    Path confFile = dir.resolve("nginx.conf");
    Files.writeString(confFile, conf);
    Process p = new ProcessBuilder("nginx", "-c", confFile.toString(), "-p", dir.toString())
        .redirectErrorStream(true).redirectOutput(dir.resolve("logs/stdout.log").toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      try (var s = new java.net.Socket("127.0.0.1", BASE_PORT)) {
        return p;
      } catch (IOException e) {
        if (!p.isAlive() || System.nanoTime() > deadline) {
          throw new IllegalStateException("nginx did not start: " + Files.readString(dir.resolve("logs/stdout.log")));
        }
        Thread.sleep(50);
      }
    }
  }

  private static Process startAgent(Path bin, String kafka, Path work) throws Exception {
    Path ready = work.resolve("agent.ready");
    Files.deleteIfExists(ready);
    Process p = new ProcessBuilder(bin.toString(), "--host-id", "bench", "--kafka-brokers", kafka,
        "--ready-file", ready.toString(), "--transaction-interval-ms", "1000",
        "--log-level", "warn").redirectErrorStream(true).redirectOutput(work.resolve("agent.log").toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!Files.exists(ready)) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        throw new IllegalStateException("agent did not attach: " + Files.readString(work.resolve("agent.log")));
      }
      Thread.sleep(100);
    }
    return p;
  }

  private static Process wrk(Path work, Scenario s, int port, int seconds) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("wrk", "-t1", "-c" + s.connections(), "-d" + seconds + "s",
        "--latency", "--timeout", "5s"));
    if (s.delayMs() > 0) {
      Path lua = work.resolve("delay-" + s.delayMs() + ".lua");
      Files.writeString(lua, "function delay()\n  return " + s.delayMs() + "\nend\n");
      cmd.add("-s");
      cmd.add(lua.toString());
    }
    cmd.add("http://127.0.0.1:" + port + "/");
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
  }

  private static final Pattern PCT = Pattern.compile("^\\s*(50|75|90|99)%\\s+([0-9.]+)(us|ms|s)\\s*$", Pattern.MULTILINE);
  private static final Pattern REQS = Pattern.compile("(\\d+) requests in ([0-9.]+)(ms|s|m)");

  static WrkResult parseWrk(String out) {
    long[] p = new long[QS.length];
    Matcher m = PCT.matcher(out);
    int found = 0;
    while (m.find()) {
      int idx = switch (m.group(1)) {
        case "50" -> 0;
        case "75" -> 1;
        case "90" -> 2;
        default -> 3;
      };
      double v = Double.parseDouble(m.group(2));
      p[idx] = Math.round(v * switch (m.group(3)) {
        case "us" -> 1e3;
        case "ms" -> 1e6;
        default -> 1e9;
      });
      found++;
    }
    Matcher r = REQS.matcher(out);
    if (found != QS.length || !r.find()) {
      throw new IllegalStateException("cannot read wrk's latency distribution and request count from:\n" + out);
    }
    double secs = Double.parseDouble(r.group(2)) * switch (r.group(3)) {
      case "ms" -> 1e-3;
      case "m" -> 60;
      default -> 1;
    };
    return new WrkResult(Long.parseLong(r.group(1)), secs, p);
  }

  private record Merged(TransactionHistograms.Histogram client, TransactionHistograms.Histogram server) {}

  /**
   * Reads every TransactionStats record from the start of the topic, keeping wrk's (by pid, CLIENT)
   * and nginx's on the scenario's port (SERVER), until the client count has not changed for 3 s after
   * reaching wrk's count (or 30 s passed): the agent reports each interval and each close.
   */
  private static Merged awaitAgent(String bootstrap, long wrkPid, int port, long wrkRequests) throws Exception {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    var decoder = WattgraphSchemas.transactionStatsDecoder();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    long lastCount = -1;
    long stableSince = System.nanoTime();
    Merged m;
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition tp = new TopicPartition(TOPIC, 0);
      c.assign(List.of(tp));
      while (true) {
        c.seekToBeginning(List.of(tp));
        long end = c.endOffsets(List.of(tp)).get(tp);
        TransactionHistograms.Histogram client = null;
        TransactionHistograms.Histogram server = null;
        Set<Long> seen = new HashSet<>();
        while (c.position(tp) < end) {
          for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
            if (!seen.add(r.offset())) {
              continue;
            }
            TransactionStats t = decoder.decode(r.value());
            if (t.getRole() == TransactionRole.CLIENT && t.getTgid() == wrkPid && t.getRemotePort() == port) {
              client = client == null ? new TransactionHistograms.Histogram(t.getSubBucketBits()) : client;
              client.add(t);
            } else if (t.getRole() == TransactionRole.SERVER && t.getLocalPort() == port) {
              server = server == null ? new TransactionHistograms.Histogram(t.getSubBucketBits()) : server;
              server.add(t);
            }
          }
        }
        m = new Merged(client == null ? new TransactionHistograms.Histogram(7) : client,
            server == null ? new TransactionHistograms.Histogram(7) : server);
        long n = m.client.total();
        if (n != lastCount) {
          lastCount = n;
          stableSince = System.nanoTime();
        }
        boolean stable = System.nanoTime() - stableSince > TimeUnit.SECONDS.toNanos(3);
        if ((n >= wrkRequests && stable) || System.nanoTime() > deadline) {
          return m;
        }
        Thread.sleep(500);
      }
    }
  }

  private static void stopProcess(Process p) throws InterruptedException {
    p.destroy();
    if (!p.waitFor(20, TimeUnit.SECONDS)) {
      p.destroyForcibly();
    }
  }

  private LatencyAccuracyBenchmark() {}
}
