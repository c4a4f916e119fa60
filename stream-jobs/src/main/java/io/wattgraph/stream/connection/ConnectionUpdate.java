package io.wattgraph.stream.connection;

import io.wattgraph.stream.typeinfo.RecordTypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * Correlator output for one connection instance, keyed downstream by {@link #edgeKey}.
 *
 * <p>UPSERT carries the connection's absolute cumulative totals on its current edge; RETRACT
 * removes the connection from an edge it no longer belongs to (it moved, e.g. External to the real
 * peer); FINISHED says the connection is over, so the edge may fold it into its totals and forget it.
 */
@TypeInfo(RecordTypeInfoFactory.class)
public class ConnectionUpdate {
  public enum Type {
    UPSERT,
    RETRACT,
    FINISHED
  }

  public Type type;
  public String connectionId;
  public String edgeKey;
  public GraphNode client;
  public GraphNode server;
  public long bytesClientToServer;
  public long bytesServerToClient;
  public long firstSeenNs;
  public long lastSeenNs;
  /**
   * The continuation of a connection that was idle-expired and woke up: its bytes are only those
   * since the expiry, and it is not counted as another connection.
   */
  public boolean continuation;
  /**
   * UPSERT: how many connections of its edge this one stands for under load shedding (a
   * Horvitz-Thompson weight, 1 / keep probability): 1 when not sampled; 0 for a continuation or
   * when an end shed it (reported only for its bytes).
   */
  public double weight;

  public ConnectionUpdate() {}

  static ConnectionUpdate marker(Type type, String connectionId, String edgeKey) {
    ConnectionUpdate u = new ConnectionUpdate();
    u.type = type;
    u.connectionId = connectionId;
    u.edgeKey = edgeKey;
    return u;
  }

  @Override
  public String toString() {
    return type + "{" + connectionId + " on " + edgeKey
        + (type == Type.UPSERT
            ? " c2s=" + bytesClientToServer + " s2c=" + bytesServerToClient + (weight != 1 ? " w=" + weight : "") : "")
        + "}";
  }
}
