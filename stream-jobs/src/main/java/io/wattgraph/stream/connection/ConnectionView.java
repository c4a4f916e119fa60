package io.wattgraph.stream.connection;

import io.wattgraph.stream.ConnectionState;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.Side;

/** A connection instance as the graph should show it: its edge, bytes, first and last seen, weight. */
final class ConnectionView {
  private ConnectionView() {}

  /** The connection as the graph should show it now. */
  static ConnectionUpdate of(ConnectionState s) {
    boolean clientIsLow = clientIsLow(s.low, s.high);
    Side c = s.side(clientIsLow);
    Side v = s.side(!clientIsLow);
    ConnectionUpdate u = new ConnectionUpdate();
    u.type = ConnectionUpdate.Type.UPSERT;
    u.connectionId = s.connectionId;
    u.client = c != null ? GraphNode.process(c) : GraphNode.externalClient(v.remoteIp);
    u.server = v != null ? GraphNode.process(v)
        : s.resolvedServer != null ? GraphNode.process(s.resolvedServer)
        : GraphNode.externalServer(c.remoteIp, c.remotePort);
    u.edgeKey = GraphNode.edgeKey(u.client, u.server);
    // Each end counts the same payload; an agent may have missed some (started late), so take max.
    // Minus what earlier generations (before an idle expiry) already folded into the totals.
    u.bytesClientToServer = Math.max(0, Math.max(c == null ? 0 : c.bytesSent, v == null ? 0 : v.bytesReceived)
        - s.baselineClientToServer);
    u.bytesServerToClient = Math.max(0, Math.max(v == null ? 0 : v.bytesSent, c == null ? 0 : c.bytesReceived)
        - s.baselineServerToClient);
    u.continuation = s.generation > 0;
    // Not counted again (continuation), else how many connections this one stands for.
    u.weight = u.continuation ? 0 : weight(c, v);
    u.firstSeenNs = Math.min(c == null ? Long.MAX_VALUE : c.firstSeenNs, v == null ? Long.MAX_VALUE : v.firstSeenNs);
    u.lastSeenNs = Math.max(c == null ? Long.MIN_VALUE : c.lastSeenNs, v == null ? Long.MIN_VALUE : v.lastSeenNs);
    return u;
  }

  /**
   * Horvitz-Thompson weight: 1 / the probability with which the connection is counted. A connection
   * is counted when its client end reported it, whether the server end did or not (a lone client
   * end is put on its server's edge by endpoint, or withheld): probability p_client. Weighing by
   * the client keeps a small client of a big, heavily sampled server exact (pairs alone are seen
   * at min(p_client, p_server)). Without a client end (its agent is not there), the server's own
   * p. p = 0 (shed, reported for its bytes) stands for no connection: the kept ones stand for it.
   */
  static double weight(Side client, Side server) {
    double p = client != null ? client.keepProbability : server.keepProbability;
    return p > 0 ? 1 / p : 0;
  }

  /**
   * Whether the low endpoint is the client: a known role on either side decides; with both roles
   * UNKNOWN the sorted order does (the low endpoint is taken as client), as in the Kafka key.
   */
  static boolean clientIsLow(Side low, Side high) {
    Role lo = low == null ? Role.UNKNOWN : low.role;
    Role hi = high == null ? Role.UNKNOWN : high.role;
    if (lo == Role.CLIENT || hi == Role.SERVER) {
      return true;
    }
    if (lo == Role.SERVER || hi == Role.CLIENT) {
      return false;
    }
    return true;
  }
}
