package io.wattgraph.stream.connection;

import io.wattgraph.stream.Side;
import io.wattgraph.stream.source.Endpoints;
import io.wattgraph.stream.typeinfo.RecordTypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/** A Process or External node of the graph (contracts.md), with the properties the sink writes. */
@TypeInfo(RecordTypeInfoFactory.class)
public class GraphNode {
  public enum Kind {
    PROCESS,
    EXTERNAL
  }

  public Kind kind;
  public String id;
  // Process properties.
  public String hostId;
  public int pid;
  public long startTimeNs;
  public String comm;
  public String cmdline;
  public long cgroupId;
  public String containerId;
  // External properties; port is null for a client (its ephemeral port would make a node per connection).
  public String address;
  public Integer port;

  public GraphNode() {}

  static GraphNode process(Side s) {
    GraphNode n = new GraphNode();
    n.kind = Kind.PROCESS;
    n.hostId = s.hostId;
    if (s.tgid == 0) {
      // Never seen in process context: the host's catch-all process (contracts.md).
      n.pid = 0;
      n.startTimeNs = 0;
      n.comm = "?";
    } else {
      n.pid = s.tgid;
      n.startTimeNs = s.processStartTimeNs;
      n.comm = s.comm;
      n.cmdline = s.cmdline;
      n.cgroupId = s.cgroupId;
      n.containerId = s.containerId;
    }
    n.id = s.hostId + "/" + n.pid + "/" + n.startTimeNs;
    return n;
  }

  public static GraphNode externalServer(String ip, int port) {
    GraphNode n = new GraphNode();
    n.kind = Kind.EXTERNAL;
    n.address = ip;
    n.port = port;
    n.id = Endpoints.of(ip, port);
    return n;
  }

  public static GraphNode externalClient(String ip) {
    GraphNode n = new GraphNode();
    n.kind = Kind.EXTERNAL;
    n.address = ip;
    n.id = ip;
    return n;
  }

  /** Kind-qualified id: a Process id and an External id can never collide in an edge key. */
  String qualifiedId() {
    return (kind == Kind.PROCESS ? "P:" : "E:") + id;
  }

  /**
   * {@code latest}, its missing command line and container filled in (in place) from
   * {@code known} when both are the same node: the sink writes rows as they are, and only the
   * newest row per edge may reach Neo4j.
   */
  static GraphNode keepingKnown(GraphNode latest, GraphNode known) {
    if (known != null && latest != known && latest.id.equals(known.id)) {
      if (latest.cmdline == null) {
        latest.cmdline = known.cmdline;
      }
      if (latest.containerId == null) {
        latest.containerId = known.containerId;
      }
    }
    return latest;
  }

  static String edgeKey(GraphNode client, GraphNode server) {
    return client.qualifiedId() + ">" + server.qualifiedId();
  }

  @Override
  public String toString() {
    return qualifiedId();
  }
}
