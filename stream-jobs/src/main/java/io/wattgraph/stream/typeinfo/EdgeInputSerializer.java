package io.wattgraph.stream.typeinfo;

import io.wattgraph.stream.transaction.EdgeInput;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * {@link EdgeInput}: each TransactionStats record once more, shuffled to its edge's windows. Only on
 * the wire, never in state (the windows keep accumulators), so its layout may change without a
 * {@link LayoutSnapshot}.
 */
public final class EdgeInputSerializer extends RecordSerializer<EdgeInput> {
  private static final long serialVersionUID = 1L;
  public static final EdgeInputSerializer INSTANCE = new EdgeInputSerializer();

  @Override
  public EdgeInput createInstance() {
    return new EdgeInput();
  }

  @Override
  public EdgeInput copy(EdgeInput f) {
    EdgeInput e = new EdgeInput();
    e.clientKind = f.clientKind;
    e.clientId = f.clientId;
    e.serverKind = f.serverKind;
    e.serverId = f.serverId;
    e.transaction = f.transaction == null ? null : TransactionSerializer.copyOf(f.transaction);
    e.retraction = f.retraction;
    return e;
  }

  @Override
  public void serialize(EdgeInput e, DataOutputView out) throws IOException {
    writeString(e.clientKind, out);
    writeString(e.clientId, out);
    writeString(e.serverKind, out);
    writeString(e.serverId, out);
    out.writeBoolean(e.transaction != null);
    if (e.transaction != null) {
      TransactionSerializer.write(e.transaction, out);
    }
    out.writeBoolean(e.retraction);
  }

  @Override
  public EdgeInput deserialize(DataInputView in) throws IOException {
    EdgeInput e = new EdgeInput();
    e.clientKind = readString(in);
    e.clientId = readString(in);
    e.serverKind = readString(in);
    e.serverId = readString(in);
    if (in.readBoolean()) {
      e.transaction = TransactionSerializer.readTransaction(in);
    }
    e.retraction = in.readBoolean();
    return e;
  }

  @Override
  public TypeSerializerSnapshot<EdgeInput> snapshotConfiguration() {
    return new Snapshot();
  }

  public static final class Snapshot extends SimpleTypeSerializerSnapshot<EdgeInput> {
    public Snapshot() {
      super(() -> INSTANCE);
    }
  }
}
