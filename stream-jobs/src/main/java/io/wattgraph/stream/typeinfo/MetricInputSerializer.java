package io.wattgraph.stream.typeinfo;

import io.wattgraph.stream.HttpRoute;
import io.wattgraph.stream.HttpRouteTotals;
import io.wattgraph.stream.LatencyHistogram;
import io.wattgraph.stream.PodMetadata;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.TransactionTotals;
import io.wattgraph.stream.window.MetricInput;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * {@link MetricInput}: every ResourceSample and TransactionStats record becomes one to five of
 * them (one per level), each shuffled to the windows. A transaction input carries its whole
 * {@link Transaction} (histograms, HTTP routes), in {@link TransactionSerializer}'s layout; an
 * input of combined transactions their {@link TransactionTotals} and {@link HttpRouteTotals}.
 */
public final class MetricInputSerializer extends RecordSerializer<MetricInput> {
  private static final long serialVersionUID = 1L;
  public static final MetricInputSerializer INSTANCE = new MetricInputSerializer();

  @Override
  public MetricInput createInstance() {
    return new MetricInput();
  }

  @Override
  public MetricInput copy(MetricInput f) {
    MetricInput m = new MetricInput();
    m.level = f.level;
    m.hostId = f.hostId;
    m.entityId = f.entityId;
    m.groupId = f.groupId;
    m.podUid = f.podUid;
    m.pod = f.pod == null ? null : copy(f.pod);
    m.comm = f.comm;
    m.intervalEndNs = f.intervalEndNs;
    m.intervalNs = f.intervalNs;
    m.cpuTimeNs = f.cpuTimeNs;
    m.energyJoules = f.energyJoules;
    m.idleEnergyJoules = f.idleEnergyJoules;
    m.measured = f.measured;
    m.threads = f.threads;
    m.processes = f.processes;
    m.hostCores = f.hostCores;
    m.recordId = f.recordId;
    m.transaction = f.transaction == null ? null : TransactionSerializer.copyOf(f.transaction);
    m.transactions = f.transactions == null ? null : copy(f.transactions);
    m.httpRoutes = f.httpRoutes == null ? null : copy(f.httpRoutes);
    return m;
  }

  @Override
  public void serialize(MetricInput m, DataOutputView out) throws IOException {
    writeString(m.level, out);
    writeString(m.hostId, out);
    writeString(m.entityId, out);
    writeString(m.groupId, out);
    writeString(m.podUid, out);
    out.writeBoolean(m.pod != null);
    if (m.pod != null) {
      writeString(m.pod.name, out);
      writeString(m.pod.namespace, out);
      writeStrings(m.pod.labels, out);
    }
    writeString(m.comm, out);
    out.writeLong(m.intervalEndNs);
    out.writeLong(m.intervalNs);
    out.writeLong(m.cpuTimeNs);
    out.writeDouble(m.energyJoules);
    out.writeDouble(m.idleEnergyJoules);
    out.writeBoolean(m.measured);
    out.writeInt(m.threads);
    out.writeInt(m.processes);
    out.writeInt(m.hostCores);
    out.writeLong(m.recordId);
    out.writeBoolean(m.transaction != null);
    if (m.transaction != null) {
      TransactionSerializer.write(m.transaction, out);
    }
    out.writeBoolean(m.transactions != null);
    if (m.transactions != null) {
      serialize(m.transactions, out);
    }
    TransactionSerializer.writeRoutes(m.httpRoutes == null ? null : m.httpRoutes.routes, out);
  }

  @Override
  public MetricInput deserialize(DataInputView in) throws IOException {
    MetricInput m = new MetricInput();
    m.level = readString(in);
    m.hostId = readString(in);
    m.entityId = readString(in);
    m.groupId = readString(in);
    m.podUid = readString(in);
    if (in.readBoolean()) {
      m.pod = new PodMetadata();
      m.pod.name = readString(in);
      m.pod.namespace = readString(in);
      m.pod.labels = readStrings(in);
    }
    m.comm = readString(in);
    m.intervalEndNs = in.readLong();
    m.intervalNs = in.readLong();
    m.cpuTimeNs = in.readLong();
    m.energyJoules = in.readDouble();
    m.idleEnergyJoules = in.readDouble();
    m.measured = in.readBoolean();
    m.threads = in.readInt();
    m.processes = in.readInt();
    m.hostCores = in.readInt();
    m.recordId = in.readLong();
    if (in.readBoolean()) {
      m.transaction = TransactionSerializer.readTransaction(in);
    }
    if (in.readBoolean()) {
      m.transactions = readTotals(in);
    }
    HttpRoute[] routes = TransactionSerializer.readRoutes(in);
    if (routes != null) {
      m.httpRoutes = new HttpRouteTotals();
      m.httpRoutes.routes = routes;
    }
    return m;
  }

  private static void serialize(TransactionTotals t, DataOutputView out) throws IOException {
    out.writeInt(t.records);
    out.writeLong(t.clientTransactions);
    out.writeLong(t.serverTransactions);
    out.writeLong(t.clientRequestBytes);
    out.writeLong(t.clientResponseBytes);
    out.writeLong(t.serverRequestBytes);
    out.writeLong(t.serverResponseBytes);
    out.writeInt(t.subBucketBits);
    TransactionSerializer.writeHistogram(t.clientRtt, out);
    TransactionSerializer.writeHistogram(t.serverTime, out);
  }

  private static TransactionTotals readTotals(DataInputView in) throws IOException {
    TransactionTotals t = new TransactionTotals();
    t.records = in.readInt();
    t.clientTransactions = in.readLong();
    t.serverTransactions = in.readLong();
    t.clientRequestBytes = in.readLong();
    t.clientResponseBytes = in.readLong();
    t.serverRequestBytes = in.readLong();
    t.serverResponseBytes = in.readLong();
    t.subBucketBits = in.readInt();
    t.clientRtt = TransactionSerializer.readHistogram(in);
    t.serverTime = TransactionSerializer.readHistogram(in);
    return t;
  }

  private static PodMetadata copy(PodMetadata f) {
    PodMetadata p = new PodMetadata();
    p.name = f.name;
    p.namespace = f.namespace;
    p.labels = f.labels == null ? null : f.labels.clone();
    return p;
  }

  private static TransactionTotals copy(TransactionTotals f) {
    TransactionTotals t = new TransactionTotals();
    t.records = f.records;
    t.clientTransactions = f.clientTransactions;
    t.serverTransactions = f.serverTransactions;
    t.clientRequestBytes = f.clientRequestBytes;
    t.clientResponseBytes = f.clientResponseBytes;
    t.serverRequestBytes = f.serverRequestBytes;
    t.serverResponseBytes = f.serverResponseBytes;
    t.subBucketBits = f.subBucketBits;
    t.clientRtt = TransactionSerializer.copy(f.clientRtt);
    t.serverTime = TransactionSerializer.copy(f.serverTime);
    return t;
  }

  private static HttpRouteTotals copy(HttpRouteTotals f) {
    HttpRouteTotals h = new HttpRouteTotals();
    h.routes = TransactionSerializer.copy(f.routes);
    return h;
  }

  /** Arrays as a varint of length + 1 (0 = null), then the elements. */
  private static void writeStrings(String[] a, DataOutputView out) throws IOException {
    writeVarInt(a == null ? 0 : a.length + 1, out);
    if (a != null) {
      for (String s : a) {
        writeString(s, out);
      }
    }
  }

  private static String[] readStrings(DataInputView in) throws IOException {
    int n = readVarInt(in);
    if (n == 0) {
      return null;
    }
    String[] a = new String[n - 1];
    for (int i = 0; i < a.length; i++) {
      a[i] = readString(in);
    }
    return a;
  }

  @Override
  public TypeSerializerSnapshot<MetricInput> snapshotConfiguration() {
    return new Snapshot();
  }

  public static final class Snapshot extends SimpleTypeSerializerSnapshot<MetricInput> {
    public Snapshot() {
      super(() -> INSTANCE);
    }
  }
}
