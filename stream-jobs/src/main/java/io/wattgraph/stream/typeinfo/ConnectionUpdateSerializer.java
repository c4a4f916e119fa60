package io.wattgraph.stream.typeinfo;

import io.wattgraph.stream.connection.ConnectionUpdate;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * {@link ConnectionUpdate}: shuffled once per correlator output (to the edge aggregator); in no
 * state, but versioned like {@link ObservationSerializer}: layout 2 appends {@code weight}.
 */
public final class ConnectionUpdateSerializer extends RecordSerializer<ConnectionUpdate> {
  private static final long serialVersionUID = 1L;
  public static final ConnectionUpdateSerializer INSTANCE = new ConnectionUpdateSerializer();
  private static final ConnectionUpdate.Type[] TYPES = ConnectionUpdate.Type.values();
  static final int LAYOUT = 2;

  @Override
  public ConnectionUpdate createInstance() {
    return new ConnectionUpdate();
  }

  @Override
  public ConnectionUpdate copy(ConnectionUpdate f) {
    ConnectionUpdate u = new ConnectionUpdate();
    u.type = f.type;
    u.connectionId = f.connectionId;
    u.edgeKey = f.edgeKey;
    u.client = GraphNodeSerializer.copyOrNull(f.client);
    u.server = GraphNodeSerializer.copyOrNull(f.server);
    u.bytesClientToServer = f.bytesClientToServer;
    u.bytesServerToClient = f.bytesServerToClient;
    u.firstSeenNs = f.firstSeenNs;
    u.lastSeenNs = f.lastSeenNs;
    u.continuation = f.continuation;
    u.weight = f.weight;
    return u;
  }

  @Override
  public void serialize(ConnectionUpdate u, DataOutputView out) throws IOException {
    writeLayout1(u, out);
    out.writeDouble(u.weight);
  }

  @Override
  public ConnectionUpdate deserialize(DataInputView in) throws IOException {
    ConnectionUpdate u = readLayout1(in);
    u.weight = in.readDouble();
    return u;
  }

  private static void writeLayout1(ConnectionUpdate u, DataOutputView out) throws IOException {
    writeEnum(u.type, out);
    writeString(u.connectionId, out);
    writeString(u.edgeKey, out);
    GraphNodeSerializer.writeOrNull(u.client, out);
    GraphNodeSerializer.writeOrNull(u.server, out);
    out.writeLong(u.bytesClientToServer);
    out.writeLong(u.bytesServerToClient);
    out.writeLong(u.firstSeenNs);
    out.writeLong(u.lastSeenNs);
    out.writeBoolean(u.continuation);
  }

  private static ConnectionUpdate readLayout1(DataInputView in) throws IOException {
    ConnectionUpdate u = new ConnectionUpdate();
    u.type = readEnum(TYPES, in);
    u.connectionId = readString(in);
    u.edgeKey = readString(in);
    u.client = GraphNodeSerializer.readOrNull(in);
    u.server = GraphNodeSerializer.readOrNull(in);
    u.bytesClientToServer = in.readLong();
    u.bytesServerToClient = in.readLong();
    u.firstSeenNs = in.readLong();
    u.lastSeenNs = in.readLong();
    u.continuation = in.readBoolean();
    return u;
  }

  @Override
  public TypeSerializerSnapshot<ConnectionUpdate> snapshotConfiguration() {
    return new Snapshot();
  }

  /** Same class name as the SimpleTypeSerializerSnapshot of layout 1. */
  public static final class Snapshot extends LayoutSnapshot<ConnectionUpdate> {
    public Snapshot() {
      this(LAYOUT);
    }

    Snapshot(int layout) {
      super(layout, INSTANCE, Layout1.INSTANCE);
    }
  }

  /** Updates of the build before weights: nothing was sampled, so an UPSERT counted once unless a continuation. */
  public static final class Layout1 extends RecordSerializer<ConnectionUpdate> {
    private static final long serialVersionUID = 1L;
    public static final Layout1 INSTANCE = new Layout1();

    @Override
    public ConnectionUpdate createInstance() {
      return new ConnectionUpdate();
    }

    @Override
    public ConnectionUpdate copy(ConnectionUpdate from) {
      return ConnectionUpdateSerializer.INSTANCE.copy(from);
    }

    @Override
    public void serialize(ConnectionUpdate u, DataOutputView out) throws IOException {
      writeLayout1(u, out);
    }

    @Override
    public ConnectionUpdate deserialize(DataInputView in) throws IOException {
      ConnectionUpdate u = readLayout1(in);
      u.weight = u.type == ConnectionUpdate.Type.UPSERT && !u.continuation ? 1 : 0;
      return u;
    }

    @Override
    public TypeSerializerSnapshot<ConnectionUpdate> snapshotConfiguration() {
      return new Snapshot(1);
    }
  }
}
