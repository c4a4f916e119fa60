package io.wattgraph.stream.window;

import io.wattgraph.stream.HttpRoute;

/** One route of a window result: the merged (and capped) route with its rate and latency figures. */
public class HttpRouteRow {
  public HttpRoute route;
  /** transactions / window seconds. */
  public double requestRate;
  /** Read off the route's merged histogram (see {@code LatencyHistogram#stats}). */
  public LatencyStats latency;

  public HttpRouteRow() {}

  static HttpRouteRow of(HttpRoute route, double windowSeconds, int subBucketBits) {
    HttpRouteRow r = new HttpRouteRow();
    r.route = route;
    r.requestRate = route.transactions / windowSeconds;
    r.latency = route.latency.stats(subBucketBits);
    return r;
  }
}
