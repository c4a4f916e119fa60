package io.wattgraph.stream.typeinfo;

import io.wattgraph.stream.connection.GraphNode;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/** {@link GraphNode}, alone (edge state) and inside the correlator's updates and the edge rows. */
public final class GraphNodeSerializer extends RecordSerializer<GraphNode> {
  private static final long serialVersionUID = 1L;
  public static final GraphNodeSerializer INSTANCE = new GraphNodeSerializer();
  private static final GraphNode.Kind[] KINDS = GraphNode.Kind.values();

  @Override
  public GraphNode createInstance() {
    return new GraphNode();
  }

  @Override
  public GraphNode copy(GraphNode f) {
    return copyOrNull(f);
  }

  static GraphNode copyOrNull(GraphNode f) {
    if (f == null) {
      return null;
    }
    GraphNode n = new GraphNode();
    n.kind = f.kind;
    n.id = f.id;
    n.hostId = f.hostId;
    n.pid = f.pid;
    n.startTimeNs = f.startTimeNs;
    n.comm = f.comm;
    n.cmdline = f.cmdline;
    n.cgroupId = f.cgroupId;
    n.containerId = f.containerId;
    n.address = f.address;
    n.port = f.port;
    return n;
  }

  @Override
  public void serialize(GraphNode n, DataOutputView out) throws IOException {
    writeOrNull(n, out);
  }

  @Override
  public GraphNode deserialize(DataInputView in) throws IOException {
    return readOrNull(in);
  }

  /** A presence byte first, so records can hold a null node. */
  static void writeOrNull(GraphNode n, DataOutputView out) throws IOException {
    out.writeBoolean(n != null);
    if (n == null) {
      return;
    }
    writeEnum(n.kind, out);
    writeString(n.id, out);
    writeString(n.hostId, out);
    out.writeInt(n.pid);
    out.writeLong(n.startTimeNs);
    writeString(n.comm, out);
    writeString(n.cmdline, out);
    out.writeLong(n.cgroupId);
    writeString(n.containerId, out);
    writeString(n.address, out);
    out.writeBoolean(n.port != null);
    if (n.port != null) {
      out.writeInt(n.port);
    }
  }

  static GraphNode readOrNull(DataInputView in) throws IOException {
    if (!in.readBoolean()) {
      return null;
    }
    GraphNode n = new GraphNode();
    n.kind = readEnum(KINDS, in);
    n.id = readString(in);
    n.hostId = readString(in);
    n.pid = in.readInt();
    n.startTimeNs = in.readLong();
    n.comm = readString(in);
    n.cmdline = readString(in);
    n.cgroupId = in.readLong();
    n.containerId = readString(in);
    n.address = readString(in);
    n.port = in.readBoolean() ? in.readInt() : null;
    return n;
  }

  @Override
  public TypeSerializerSnapshot<GraphNode> snapshotConfiguration() {
    return new Snapshot();
  }

  public static final class Snapshot extends SimpleTypeSerializerSnapshot<GraphNode> {
    public Snapshot() {
      super(() -> INSTANCE);
    }
  }
}
