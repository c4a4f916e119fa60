package io.wattgraph.stream.typeinfo;

import io.wattgraph.stream.HttpRoute;
import io.wattgraph.stream.LatencyHistogram;
import io.wattgraph.stream.Transaction;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * {@link Transaction} between tasks: every TransactionStats record is shuffled three times (to its
 * process's groups, its client endpoint's VIP resolution, its connection's pairing) and inside
 * every {@link io.wattgraph.stream.transaction.EdgeInput} and transaction {@link io.wattgraph.stream.window.MetricInput}.
 * Also the layouts of histograms and HTTP routes those records share. Not used for operator state:
 * state keeps the POJO format it always had ({@link Transaction#STATE_TYPE}).
 */
public final class TransactionSerializer extends RecordSerializer<Transaction> {
  private static final long serialVersionUID = 1L;
  public static final TransactionSerializer INSTANCE = new TransactionSerializer();

  @Override
  public Transaction createInstance() {
    return new Transaction();
  }

  @Override
  public Transaction copy(Transaction f) {
    return copyOf(f);
  }

  @Override
  public void serialize(Transaction t, DataOutputView out) throws IOException {
    write(t, out);
  }

  @Override
  public Transaction deserialize(DataInputView in) throws IOException {
    return readTransaction(in);
  }

  static void write(Transaction t, DataOutputView out) throws IOException {
    writeString(t.hostId, out);
    out.writeLong(t.intervalStartNs);
    out.writeLong(t.intervalEndNs);
    writeString(t.role, out);
    writeString(t.localIp, out);
    out.writeInt(t.localPort);
    writeString(t.remoteIp, out);
    out.writeInt(t.remotePort);
    out.writeInt(t.tgid);
    out.writeLong(t.processStartTimeNs);
    writeString(t.comm, out);
    out.writeBoolean(t.closed);
    out.writeLong(t.transactions);
    out.writeLong(t.requestBytes);
    out.writeLong(t.responseBytes);
    out.writeInt(t.subBucketBits);
    writeInts(t.buckets, out);
    writeLongs(t.counts, out);
    writeRoutes(t.httpRoutes, out);
    out.writeLong(t.recordId);
  }

  static Transaction readTransaction(DataInputView in) throws IOException {
    Transaction t = new Transaction();
    t.hostId = readString(in);
    t.intervalStartNs = in.readLong();
    t.intervalEndNs = in.readLong();
    t.role = readString(in);
    t.localIp = readString(in);
    t.localPort = in.readInt();
    t.remoteIp = readString(in);
    t.remotePort = in.readInt();
    t.tgid = in.readInt();
    t.processStartTimeNs = in.readLong();
    t.comm = readString(in);
    t.closed = in.readBoolean();
    t.transactions = in.readLong();
    t.requestBytes = in.readLong();
    t.responseBytes = in.readLong();
    t.subBucketBits = in.readInt();
    t.buckets = readInts(in);
    t.counts = readLongs(in);
    t.httpRoutes = readRoutes(in);
    t.recordId = in.readLong();
    return t;
  }

  static Transaction copyOf(Transaction f) {
    Transaction t = new Transaction();
    t.hostId = f.hostId;
    t.intervalStartNs = f.intervalStartNs;
    t.intervalEndNs = f.intervalEndNs;
    t.role = f.role;
    t.localIp = f.localIp;
    t.localPort = f.localPort;
    t.remoteIp = f.remoteIp;
    t.remotePort = f.remotePort;
    t.tgid = f.tgid;
    t.processStartTimeNs = f.processStartTimeNs;
    t.comm = f.comm;
    t.closed = f.closed;
    t.transactions = f.transactions;
    t.requestBytes = f.requestBytes;
    t.responseBytes = f.responseBytes;
    t.subBucketBits = f.subBucketBits;
    t.buckets = f.buckets == null ? null : f.buckets.clone();
    t.counts = f.counts == null ? null : f.counts.clone();
    t.httpRoutes = copy(f.httpRoutes);
    t.recordId = f.recordId;
    return t;
  }

  /** Routes as a varint of length + 1 (0 = null), then each route. */
  static void writeRoutes(HttpRoute[] routes, DataOutputView out) throws IOException {
    if (routes == null) {
      out.writeByte(0);
      return;
    }
    writeVarInt(routes.length + 1, out);
    for (HttpRoute r : routes) {
      writeString(r.role, out);
      writeString(r.method, out);
      writeString(r.path, out);
      out.writeBoolean(r.pathTruncated);
      out.writeLong(r.transactions);
      writeHistogram(r.latency, out);
    }
  }

  static HttpRoute[] readRoutes(DataInputView in) throws IOException {
    int n = readVarInt(in);
    if (n == 0) {
      return null;
    }
    HttpRoute[] routes = new HttpRoute[n - 1];
    for (int i = 0; i < routes.length; i++) {
      HttpRoute r = new HttpRoute();
      r.role = readString(in);
      r.method = readString(in);
      r.path = readString(in);
      r.pathTruncated = in.readBoolean();
      r.transactions = in.readLong();
      r.latency = readHistogram(in);
      routes[i] = r;
    }
    return routes;
  }

  static HttpRoute[] copy(HttpRoute[] f) {
    if (f == null) {
      return null;
    }
    HttpRoute[] routes = new HttpRoute[f.length];
    for (int i = 0; i < routes.length; i++) {
      HttpRoute o = f[i];
      HttpRoute r = new HttpRoute();
      r.role = o.role;
      r.method = o.method;
      r.path = o.path;
      r.pathTruncated = o.pathTruncated;
      r.transactions = o.transactions;
      r.latency = copy(o.latency);
      routes[i] = r;
    }
    return routes;
  }

  /** A histogram as a presence flag, then its two arrays. */
  static void writeHistogram(LatencyHistogram h, DataOutputView out) throws IOException {
    out.writeBoolean(h != null);
    if (h != null) {
      writeInts(h.buckets, out);
      writeLongs(h.counts, out);
    }
  }

  static LatencyHistogram readHistogram(DataInputView in) throws IOException {
    if (!in.readBoolean()) {
      return null;
    }
    LatencyHistogram h = new LatencyHistogram();
    h.buckets = readInts(in);
    h.counts = readLongs(in);
    return h;
  }

  static LatencyHistogram copy(LatencyHistogram f) {
    if (f == null) {
      return null;
    }
    LatencyHistogram h = new LatencyHistogram();
    h.buckets = f.buckets == null ? null : f.buckets.clone();
    h.counts = f.counts == null ? null : f.counts.clone();
    return h;
  }

  @Override
  public TypeSerializerSnapshot<Transaction> snapshotConfiguration() {
    return new Snapshot();
  }

  public static final class Snapshot extends SimpleTypeSerializerSnapshot<Transaction> {
    public Snapshot() {
      super(() -> INSTANCE);
    }
  }
}
