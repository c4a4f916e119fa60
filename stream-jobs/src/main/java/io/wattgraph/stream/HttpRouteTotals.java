package io.wattgraph.stream;

import java.util.Arrays;

/**
 * The HTTP routes part of an entity window's state: every route of the window's TransactionStats,
 * merged exactly by identity (role, method, path, pathTruncated). Not capped here: which routes
 * stay after the cap depends on the window's final totals ({@code HttpRouteCap}), and an early cut
 * would not be exact. Size: at most the routes of one host (the agent bounds them per host,
 * {@code --http-routes}, default 1024), per role. A Flink POJO; kept sorted by {@link HttpRoute#ORDER}
 * so a lookup is a binary search.
 */
public class HttpRouteTotals {
  public HttpRoute[] routes = new HttpRoute[0];

  public HttpRouteTotals() {}

  /** Adds one route (copied: the caller's object is never kept or changed). */
  void add(HttpRoute r) {
    int i = Arrays.binarySearch(routes, r, HttpRoute.ORDER);
    if (i >= 0) {
      routes[i].add(r);
      return;
    }
    int at = -i - 1;
    HttpRoute[] grown = new HttpRoute[routes.length + 1];
    System.arraycopy(routes, 0, grown, 0, at);
    grown[at] = r.copy();
    System.arraycopy(routes, at, grown, at + 1, routes.length - at);
    routes = grown;
  }

  public void addAll(HttpRoute[] rs) {
    for (HttpRoute r : rs) {
      add(r);
    }
  }

  void merge(HttpRouteTotals o) {
    addAll(o.routes);
  }
}
