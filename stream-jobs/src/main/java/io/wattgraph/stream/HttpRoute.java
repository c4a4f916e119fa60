package io.wattgraph.stream;

import java.util.Comparator;

/**
 * One HTTP/1.x route of one role: its transactions and latency histogram (client round trips for
 * CLIENT, server times for SERVER), as a TransactionStats record reports it and as a window merges
 * it (a Flink POJO). Routes with the same {@link #ORDER identity} merge exactly: transactions
 * summed, histograms added.
 */
public class HttpRoute {
  /** The route the agent reports past its route table's bound, and the job's cap folds into. */
  static final String OTHER_METHOD = "OTHER";
  static final String OTHER_PATH = "*";

  /** Identity order: role, method, path, pathTruncated. */
  public static final Comparator<HttpRoute> ORDER = Comparator.<HttpRoute, String>comparing(r -> r.role)
      .thenComparing(r -> r.method)
      .thenComparing(r -> r.path)
      .thenComparing(r -> r.pathTruncated);

  /** CLIENT or SERVER: the role of the record the route came with. */
  public String role;
  public String method;
  public String path;
  public boolean pathTruncated;
  public long transactions;
  public LatencyHistogram latency = new LatencyHistogram();

  public HttpRoute() {}

  public static HttpRoute of(String role, String method, String path, boolean pathTruncated, long transactions,
      int[] buckets, long[] counts) {
    HttpRoute r = new HttpRoute();
    r.role = role;
    r.method = method;
    r.path = path;
    r.pathTruncated = pathTruncated;
    r.transactions = transactions;
    r.latency = LatencyHistogram.of(buckets, counts);
    return r;
  }

  /** An empty OTHER * route of {@code role}, to fold routes into. */
  public static HttpRoute other(String role) {
    return of(role, OTHER_METHOD, OTHER_PATH, false, 0, new int[0], new long[0]);
  }

  public boolean isOther() {
    return OTHER_METHOD.equals(method) && OTHER_PATH.equals(path) && !pathTruncated;
  }

  /** A copy to keep in a window's state (inputs are shared between the levels' window inputs). */
  public HttpRoute copy() {
    return of(role, method, path, pathTruncated, transactions, latency.buckets, latency.counts);
  }

  /** Adds another route's transactions and histogram (of any identity: folding uses it too). */
  public void add(HttpRoute o) {
    transactions += o.transactions;
    latency.add(o.latency);
  }

  /** How the graph names it: {@code ROLE METHOD path}, with "…" appended to a truncated path. */
  public String key() {
    return role + " " + method + " " + path + (pathTruncated ? "…" : "");
  }

  @Override
  public String toString() {
    return key() + " n=" + transactions;
  }
}
