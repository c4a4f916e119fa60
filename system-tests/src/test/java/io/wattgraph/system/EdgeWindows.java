package io.wattgraph.system;

import io.wattgraph.schema.EdgeMetrics;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.source.RecordIds;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** One edge's windows on {@code wattgraph.edge-metrics} as committed so far (read_committed). */
record EdgeWindows(TreeMap<Long, EdgeMetrics> latest, List<String> duplicates, TreeMap<String, Long> halfOurs) {
  static final String TOPIC = "wattgraph.edge-metrics";

  /** The windows whose client and server process ids start with these prefixes ({@code host/pid/}). */
  static EdgeWindows read(String kafka, String clientPrefix, String serverPrefix) throws Exception {
    TreeMap<Long, EdgeMetrics> latest = new TreeMap<>();
    List<String> duplicates = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    TreeMap<String, Long> halfOurs = new TreeMap<>();
    Map<String, Object> c = Map.of("bootstrap.servers", kafka, "isolation.level", "read_committed",
        "enable.auto.commit", "false");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> parts = consumer.partitionsFor(TOPIC, Duration.ofSeconds(30)).stream()
          .map(p -> new TopicPartition(TOPIC, p.partition())).toList();
      consumer.assign(parts);
      consumer.seekToBeginning(parts);
      Map<TopicPartition, Long> end = consumer.endOffsets(parts);
      while (parts.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
          EdgeMetrics m = WattgraphSchemas.edgeMetricsDecoder().decode(r.value());
          boolean client = m.getClientId().startsWith(clientPrefix);
          boolean server = m.getServerId().startsWith(serverPrefix);
          if (client != server) {
            // Our process on one end only: e.g. an External other end (latest revision not picked out here).
            halfOurs.merge(m.getClientId() + ">" + m.getServerId() + " client", m.getClientTransactions(), Long::sum);
            halfOurs.merge(m.getClientId() + ">" + m.getServerId() + " server", m.getServerTransactions(), Long::sum);
          }
          if (!client || !server) {
            continue;
          }
          if (!seen.add(m.getWindowStartNs() + "#" + m.getRevision())) {
            duplicates.add("window " + m.getWindowStartNs() + " revision " + m.getRevision());
          }
          EdgeMetrics before = latest.get(m.getWindowStartNs());
          if (before == null || before.getRevision() < m.getRevision()) {
            latest.put(m.getWindowStartNs(), m);
          }
        }
      }
    }
    return new EdgeWindows(latest, duplicates, halfOurs);
  }

  /**
   * The graph's ids ({@code host/pid/startTimeNs}) of the processes at the ends of these windows: a
   * pid alone may have been another process's earlier (an hour of pod churn reuses pids).
   */
  Set<String> processIds() {
    Set<String> ids = new HashSet<>();
    latest.values().forEach(m -> {
      ids.add(m.getClientId().toString());
      ids.add(m.getServerId().toString());
    });
    return ids;
  }

  /**
   * What the agents delivered on {@code wattgraph.transactions} for these processes (graph ids,
   * {@link #processIds}): transactions per {@code ROLE@windowStartNs} (the job's event time, interval
   * end - 1 ns, in windows of {@code windowMs} from the epoch). A record the agent sent again (the
   * same bytes: after a crash its spool sends what Kafka had not confirmed) counts once, as the job
   * drops the replay.
   */
  static TreeMap<String, Long> delivered(String kafka, Set<String> processIds, long windowMs) throws Exception {
    TreeMap<String, Long> sums = new TreeMap<>();
    Set<Long> seen = new HashSet<>();
    long windowNs = windowMs * 1_000_000;
    Map<String, Object> c = Map.of("bootstrap.servers", kafka, "enable.auto.commit", "false");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      String topic = "wattgraph.transactions";
      List<TopicPartition> parts = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      consumer.assign(parts);
      consumer.seekToBeginning(parts);
      Map<TopicPartition, Long> end = consumer.endOffsets(parts);
      while (parts.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
          if (!seen.add(RecordIds.of(r.value()))) {
            continue;
          }
          TransactionStats t = WattgraphSchemas.transactionStatsDecoder().decode(r.value());
          if (processIds.contains(t.getHostId() + "/" + t.getTgid() + "/" + t.getProcessStartTimeNs())) {
            sums.merge(t.getRole() + "@" + (t.getIntervalEndNs() - 1) / windowNs * windowNs, t.getTransactions(), Long::sum);
          }
        }
      }
    }
    return sums;
  }

  /** The job's windows in the form of {@link #delivered}. */
  TreeMap<String, Long> perWindow() {
    TreeMap<String, Long> m = new TreeMap<>();
    latest.forEach((start, w) -> {
      m.put("CLIENT@" + start, w.getClientTransactions());
      m.put("SERVER@" + start, w.getServerTransactions());
    });
    m.values().removeIf(v -> v == 0);
    return m;
  }

  long clientTransactions() {
    return latest.values().stream().mapToLong(EdgeMetrics::getClientTransactions).sum();
  }

  long serverTransactions() {
    return latest.values().stream().mapToLong(EdgeMetrics::getServerTransactions).sum();
  }

  boolean sumsTo(long n) {
    return clientTransactions() == n && serverTransactions() == n;
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(latest.size() + " windows, client " + clientTransactions() + ", server "
        + serverTransactions() + " transactions:");
    latest.values().forEach(m -> b.append(' ').append(m.getClientTransactions()).append('/').append(m.getServerTransactions())
        .append(m.getRevision() > 0 ? "r" + m.getRevision() : ""));
    if (!halfOurs.isEmpty()) {
      b.append("; windows with one of the processes only (all revisions summed): ").append(halfOurs);
    }
    return b.toString();
  }
}
