package io.wattgraph.stream.typeinfo;

import io.wattgraph.stream.Role;
import io.wattgraph.stream.source.Observation;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * {@link Observation}: shuffled twice per event (to the VIP resolver, to the correlator), and in
 * the VIP resolver's state (observations waiting for their backend). Layout 2 appends
 * {@code keepProbability} to layout 1, which {@link Layout1} still reads (as 1: not sampled).
 */
public final class ObservationSerializer extends RecordSerializer<Observation> {
  private static final long serialVersionUID = 1L;
  public static final ObservationSerializer INSTANCE = new ObservationSerializer();
  private static final Role[] ROLES = Role.values();
  static final int LAYOUT = 2;

  @Override
  public Observation createInstance() {
    return new Observation();
  }

  @Override
  public Observation copy(Observation f) {
    Observation o = new Observation();
    o.hostId = f.hostId;
    o.eventTimeNs = f.eventTimeNs;
    o.closed = f.closed;
    o.localIp = f.localIp;
    o.localPort = f.localPort;
    o.remoteIp = f.remoteIp;
    o.remotePort = f.remotePort;
    o.role = f.role;
    o.tgid = f.tgid;
    o.processStartTimeNs = f.processStartTimeNs;
    o.comm = f.comm;
    o.cmdline = f.cmdline;
    o.cgroupId = f.cgroupId;
    o.containerId = f.containerId;
    o.socketCookie = f.socketCookie;
    o.bytesSent = f.bytesSent;
    o.bytesReceived = f.bytesReceived;
    o.keepProbability = f.keepProbability;
    return o;
  }

  @Override
  public void serialize(Observation o, DataOutputView out) throws IOException {
    writeLayout1(o, out);
    out.writeDouble(o.keepProbability);
  }

  @Override
  public Observation deserialize(DataInputView in) throws IOException {
    Observation o = readLayout1(in);
    o.keepProbability = in.readDouble();
    return o;
  }

  private static void writeLayout1(Observation o, DataOutputView out) throws IOException {
    writeString(o.hostId, out);
    out.writeLong(o.eventTimeNs);
    out.writeBoolean(o.closed);
    writeString(o.localIp, out);
    out.writeInt(o.localPort);
    writeString(o.remoteIp, out);
    out.writeInt(o.remotePort);
    writeEnum(o.role, out);
    out.writeInt(o.tgid);
    out.writeLong(o.processStartTimeNs);
    writeString(o.comm, out);
    writeString(o.cmdline, out);
    out.writeLong(o.cgroupId);
    writeString(o.containerId, out);
    out.writeLong(o.socketCookie);
    out.writeLong(o.bytesSent);
    out.writeLong(o.bytesReceived);
  }

  private static Observation readLayout1(DataInputView in) throws IOException {
    Observation o = new Observation();
    o.hostId = readString(in);
    o.eventTimeNs = in.readLong();
    o.closed = in.readBoolean();
    o.localIp = readString(in);
    o.localPort = in.readInt();
    o.remoteIp = readString(in);
    o.remotePort = in.readInt();
    o.role = readEnum(ROLES, in);
    o.tgid = in.readInt();
    o.processStartTimeNs = in.readLong();
    o.comm = readString(in);
    o.cmdline = readString(in);
    o.cgroupId = in.readLong();
    o.containerId = readString(in);
    o.socketCookie = in.readLong();
    o.bytesSent = in.readLong();
    o.bytesReceived = in.readLong();
    return o;
  }

  @Override
  public TypeSerializerSnapshot<Observation> snapshotConfiguration() {
    return new Snapshot();
  }

  /** Same class name as the SimpleTypeSerializerSnapshot of layout 1, so older checkpoints find it. */
  public static final class Snapshot extends LayoutSnapshot<Observation> {
    public Snapshot() {
      this(LAYOUT);
    }

    Snapshot(int layout) {
      super(layout, INSTANCE, Layout1.INSTANCE);
    }
  }

  /** Reads (and writes) state of the build before keepProbability: every observation kept with 1. */
  public static final class Layout1 extends RecordSerializer<Observation> {
    private static final long serialVersionUID = 1L;
    public static final Layout1 INSTANCE = new Layout1();

    @Override
    public Observation createInstance() {
      return new Observation();
    }

    @Override
    public Observation copy(Observation from) {
      return ObservationSerializer.INSTANCE.copy(from);
    }

    @Override
    public void serialize(Observation o, DataOutputView out) throws IOException {
      writeLayout1(o, out);
    }

    @Override
    public Observation deserialize(DataInputView in) throws IOException {
      return readLayout1(in);
    }

    @Override
    public TypeSerializerSnapshot<Observation> snapshotConfiguration() {
      return new Snapshot(1);
    }
  }
}
