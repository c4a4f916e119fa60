package io.wattgraph.stream.source;

import io.wattgraph.schema.HttpRouteStats;
import io.wattgraph.schema.IpAddress;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.TransactionAddress;
import io.wattgraph.schema.TransactionNat;
import io.wattgraph.schema.TransactionRole;
import io.wattgraph.schema.TransactionStats;
import io.wattgraph.stream.HttpRoute;
import io.wattgraph.stream.Transaction;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/**
 * Kafka value ({@code TransactionStats}, Avro single-object encoding) to {@link Transaction},
 * validated. What does not decode or is invalid becomes a {@link DeadLetter} (the shared DLQ).
 */
public class TransactionStatsDeserializer
    extends AgentRecordDeserializer<TransactionStats, Transaction> {
  private static final long serialVersionUID = 1L;

  /** The only bucket scheme merged (the agent's, and the schema's default): others cannot be added. */
  public static final int SUB_BUCKET_BITS = 7;

  public TransactionStatsDeserializer() {
    super("transactionDeadLetters");
  }

  @Override
  protected Schema schema() {
    return TransactionStats.getClassSchema();
  }

  @Override
  protected String invalid(TransactionStats r) {
    return invalidReason(r);
  }

  @Override
  protected Transaction toValue(TransactionStats r, long recordId) {
    Transaction t = toTransaction(r);
    t.recordId = recordId;
    return t;
  }

  /** Why a decoded record cannot be used, or null when it can. */
  public static String invalidReason(TransactionStats r) {
    if (r.getHostId() == null || r.getHostId().isBlank()) {
      return "invalid: empty hostId";
    }
    if (r.getIntervalStartNs() < 0 || r.getIntervalEndNs() <= r.getIntervalStartNs()) {
      return "invalid: interval " + r.getIntervalStartNs() + ".." + r.getIntervalEndNs() + " is empty or negative";
    }
    if (r.getLocalPort() < 0 || r.getLocalPort() > 65535 || r.getRemotePort() < 0 || r.getRemotePort() > 65535) {
      return "invalid: port outside 0..65535 (local " + r.getLocalPort() + ", remote " + r.getRemotePort() + ")";
    }
    if (r.getTgid() < 0 || r.getProcessStartTimeNs() < 0) {
      return "invalid: negative tgid or process start time";
    }
    if (r.getTransactions() < 0 || r.getRequestBytes() < 0 || r.getResponseBytes() < 0) {
      return "invalid: negative count (transactions " + r.getTransactions() + ", requestBytes " + r.getRequestBytes()
          + ", responseBytes " + r.getResponseBytes() + ")";
    }
    if (r.getConnections() < 1) {
      return "invalid: connections " + r.getConnections() + " (at least 1)";
    }
    if (r.getSubBucketBits() != SUB_BUCKET_BITS) {
      return "invalid: subBucketBits " + r.getSubBucketBits() + " (only " + SUB_BUCKET_BITS + " can be merged)";
    }
    boolean client = r.getRole() == TransactionRole.CLIENT;
    String own = client ? "clientRtt" : "serverTime";
    String other = client ? "serverTime" : "clientRtt";
    List<Integer> buckets = client ? r.getClientRttBuckets() : r.getServerTimeBuckets();
    List<Long> counts = client ? r.getClientRttCounts() : r.getServerTimeCounts();
    if (!(client ? r.getServerTimeBuckets() : r.getClientRttBuckets()).isEmpty()) {
      return "invalid: " + r.getRole() + " record with a " + other + " histogram";
    }
    String histogram = histogramProblem(own, buckets, counts);
    if (histogram != null) {
      return histogram;
    }
    for (int i = 0; i < r.getHttpRoutes().size(); i++) {
      String route = routeProblem("httpRoutes[" + i + "]", r.getHttpRoutes().get(i));
      if (route != null) {
        return route;
      }
    }
    TransactionNat n = r.getNat();
    return n == null ? null
        : ConnectionEventDeserializer.natReason(n.getLocalAddress(), n.getLocalPort(), n.getRemoteAddress(), n.getRemotePort());
  }

  /** Why a histogram cannot be merged (parallel arrays, buckets strictly ascending, counts > 0), or null. */
  private static String histogramProblem(String name, List<Integer> buckets, List<Long> counts) {
    if (buckets.size() != counts.size()) {
      return "invalid: " + name + " buckets (" + buckets.size() + ") and counts (" + counts.size() + ") differ in length";
    }
    for (int i = 0; i < buckets.size(); i++) {
      if (buckets.get(i) < 0 || (i > 0 && buckets.get(i) <= buckets.get(i - 1))) {
        return "invalid: " + name + " buckets not strictly ascending and non-negative at index " + i;
      }
      if (counts.get(i) <= 0) {
        return "invalid: " + name + " count " + counts.get(i) + " at index " + i;
      }
    }
    return null;
  }

  /**
   * A route needs transactions and a latency histogram: every route of a window result then has
   * its percentiles (WindowMetrics' latencyP50Ns... are not nullable), as the agent always reports.
   */
  private static String routeProblem(String name, HttpRouteStats route) {
    if (route.getTransactions() <= 0) {
      return "invalid: " + name + " transactions " + route.getTransactions() + " (at least 1)";
    }
    if (route.getLatencyBuckets().isEmpty()) {
      return "invalid: " + name + " has an empty latency histogram";
    }
    return histogramProblem(name + ".latency", route.getLatencyBuckets(), route.getLatencyCounts());
  }

  /**
   * With {@code nat} (TransactionStats v4) the endpoints are the translated ones, as the peer
   * reports them, so both ends of a connection through DNAT/SNAT meet in {@code TransactionEdges}.
   */
  public static Transaction toTransaction(TransactionStats r) {
    Transaction t = new Transaction();
    t.hostId = r.getHostId();
    t.intervalStartNs = r.getIntervalStartNs();
    t.intervalEndNs = r.getIntervalEndNs();
    t.role = r.getRole().name();
    TransactionNat nat = r.getNat();
    t.localIp = text(nat == null ? r.getLocalAddress() : nat.getLocalAddress());
    t.localPort = nat == null ? r.getLocalPort() : nat.getLocalPort();
    t.remoteIp = text(nat == null ? r.getRemoteAddress() : nat.getRemoteAddress());
    t.remotePort = nat == null ? r.getRemotePort() : nat.getRemotePort();
    t.tgid = r.getTgid();
    t.processStartTimeNs = r.getProcessStartTimeNs();
    t.comm = r.getComm();
    t.closed = r.getClosed();
    t.transactions = r.getTransactions();
    t.requestBytes = r.getRequestBytes();
    t.responseBytes = r.getResponseBytes();
    t.subBucketBits = r.getSubBucketBits();
    boolean client = r.getRole() == TransactionRole.CLIENT;
    List<Integer> buckets = client ? r.getClientRttBuckets() : r.getServerTimeBuckets();
    List<Long> counts = client ? r.getClientRttCounts() : r.getServerTimeCounts();
    t.buckets = ints(buckets);
    t.counts = longs(counts);
    t.httpRoutes = r.getHttpRoutes().stream()
        .map(h -> HttpRoute.of(t.role, h.getMethod(), h.getPath(), h.getPathTruncated(), h.getTransactions(),
            ints(h.getLatencyBuckets()), longs(h.getLatencyCounts())))
        .toArray(HttpRoute[]::new);
    return t;
  }

  private static String text(TransactionAddress a) {
    return IpAddresses.format(new IpAddress(a.bytes()));
  }

  private static int[] ints(List<Integer> l) {
    return l.stream().mapToInt(Integer::intValue).toArray();
  }

  private static long[] longs(List<Long> l) {
    return l.stream().mapToLong(Long::longValue).toArray();
  }

  @Override
  public TypeInformation<Decoded<Transaction>> getProducedType() {
    return TypeInformation.of(new TypeHint<Decoded<Transaction>>() {});
  }
}
