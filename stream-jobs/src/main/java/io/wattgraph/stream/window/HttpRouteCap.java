package io.wattgraph.stream.window;

import io.wattgraph.stream.HttpRoute;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Bounds the routes of a window result: at most {@code max} per role. A role with more keeps its
 * {@code max - 1} routes with the most transactions and folds the rest, together with the agent's
 * own OTHER * route, into one OTHER * route (histograms added): the routes of a role still add up to
 * all of its HTTP transactions. The result is in output order: CLIENT, then SERVER, each by
 * transactions descending, ties by identity.
 */
final class HttpRouteCap {
  private HttpRouteCap() {}

  /** Output order (and the order in which the cap keeps routes). */
  static final Comparator<HttpRoute> BY_TRANSACTIONS = Comparator.<HttpRoute, String>comparing(r -> r.role)
      .thenComparing(Comparator.comparingLong((HttpRoute r) -> r.transactions).reversed())
      .thenComparing(HttpRoute.ORDER);

  /** New route objects (the window state is not changed). */
  static List<HttpRoute> cap(HttpRoute[] routes, int max) {
    if (max < 1) {
      throw new IllegalArgumentException("max routes per role must be at least 1, got " + max);
    }
    List<HttpRoute> out = new ArrayList<>();
    for (String role : List.of("CLIENT", "SERVER")) {
      List<HttpRoute> ofRole = new ArrayList<>();
      for (HttpRoute r : routes) {
        if (role.equals(r.role)) {
          ofRole.add(r.copy());
        }
      }
      if (ofRole.size() > max) {
        ofRole = fold(ofRole, max);
      }
      ofRole.sort(BY_TRANSACTIONS);
      out.addAll(ofRole);
    }
    return out;
  }

  private static List<HttpRoute> fold(List<HttpRoute> ofRole, int max) {
    HttpRoute other = HttpRoute.other(ofRole.get(0).role);
    List<HttpRoute> named = new ArrayList<>();
    for (HttpRoute r : ofRole) {
      if (r.isOther()) {
        other.add(r);
      } else {
        named.add(r);
      }
    }
    named.sort(BY_TRANSACTIONS);
    List<HttpRoute> kept = new ArrayList<>(named.subList(0, max - 1));
    for (HttpRoute r : named.subList(max - 1, named.size())) {
      other.add(r);
    }
    kept.add(other);
    return kept;
  }
}
