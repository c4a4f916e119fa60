package io.wattgraph.stream;

/**
 * The fields of a {@code TransactionStats} record the job uses (a Flink POJO, no Avro on the wire):
 * one connection end's transactions over one agent interval, with its latency histogram (client
 * round trips for a CLIENT record, server times for a SERVER record) as parallel sorted arrays.
 */
public class Transaction {
  public String hostId;
  public long intervalStartNs;
  public long intervalEndNs;
  /** CLIENT or SERVER. */
  public String role;
  public String localIp;
  public int localPort;
  public String remoteIp;
  public int remotePort;
  public int tgid;
  public long processStartTimeNs;
  public String comm;
  public boolean closed;
  public long transactions;
  public long requestBytes;
  public long responseBytes;
  public int subBucketBits;
  /** The record's own histogram (by role): bucket indexes, strictly ascending. */
  public int[] buckets = new int[0];
  public long[] counts = new long[0];
  /** The HTTP/1.x part of the transactions per route (TransactionStats v2), of this record's role. */
  public HttpRoute[] httpRoutes = new HttpRoute[0];

  public Transaction() {}

  boolean isClient() {
    return "CLIENT".equals(role);
  }

  /** The graph's Process id of the owning process ({@code hostId/0/0} when no process was seen). */
  String processId() {
    return tgid == 0 ? hostId + "/0/0" : hostId + "/" + tgid + "/" + processStartTimeNs;
  }

  /** Both ends of a connection share the sorted endpoint pair, as in {@link Observation#connectionKey()}. */
  String connectionKey() {
    String local = Endpoints.of(localIp, localPort);
    String remote = Endpoints.of(remoteIp, remotePort);
    return Endpoints.compare(localIp, localPort, remoteIp, remotePort) <= 0
        ? local + "|" + remote
        : remote + "|" + local;
  }

  /** Event time in ms: the interval end minus 1 ns, as for ResourceSamples ({@link Sample#eventTimeMs()}). */
  long eventTimeMs() {
    return Math.floorDiv(intervalEndNs - 1, 1_000_000L);
  }

  @Override
  public String toString() {
    return "Transaction{" + hostId + " " + role + " " + Endpoints.of(localIp, localPort) + "->"
        + Endpoints.of(remoteIp, remotePort) + " tgid=" + tgid + " @" + intervalEndNs + " n=" + transactions
        + (httpRoutes.length == 0 ? "" : " routes=" + java.util.Arrays.toString(httpRoutes)) + "}";
  }
}
