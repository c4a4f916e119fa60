package io.wattgraph.stream.typeinfo;

import io.wattgraph.stream.HttpRoute;
import io.wattgraph.stream.HttpRouteTotals;
import io.wattgraph.stream.LatencyHistogram;
import io.wattgraph.stream.MetricInput;
import io.wattgraph.stream.PodMetadata;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.TransactionTotals;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * {@link MetricInput}: every ResourceSample and TransactionStats record becomes one to five of
 * them (one per level), each shuffled to the windows. A transaction input carries its whole
 * {@link Transaction} (histograms, HTTP routes), written here field by field; an input of combined
 * transactions their {@link TransactionTotals} and {@link HttpRouteTotals}. Transaction itself
 * keeps Flink's POJO serializer: it is kept in operator state, whose format this must not change.
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
    m.transaction = f.transaction == null ? null : copy(f.transaction);
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
    out.writeBoolean(m.transaction != null);
    if (m.transaction != null) {
      serialize(m.transaction, out);
    }
    out.writeBoolean(m.transactions != null);
    if (m.transactions != null) {
      serialize(m.transactions, out);
    }
    writeRoutes(m.httpRoutes == null ? null : m.httpRoutes.routes, out);
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
    if (in.readBoolean()) {
      m.transaction = readTransaction(in);
    }
    if (in.readBoolean()) {
      m.transactions = readTotals(in);
    }
    HttpRoute[] routes = readRoutes(in);
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
    writeHistogram(t.clientRtt, out);
    writeHistogram(t.serverTime, out);
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
    t.clientRtt = readHistogram(in);
    t.serverTime = readHistogram(in);
    return t;
  }

  /** A histogram as a presence flag, then its two arrays. */
  private static void writeHistogram(LatencyHistogram h, DataOutputView out) throws IOException {
    out.writeBoolean(h != null);
    if (h != null) {
      writeInts(h.buckets, out);
      writeLongs(h.counts, out);
    }
  }

  private static LatencyHistogram readHistogram(DataInputView in) throws IOException {
    if (!in.readBoolean()) {
      return null;
    }
    LatencyHistogram h = new LatencyHistogram();
    h.buckets = readInts(in);
    h.counts = readLongs(in);
    return h;
  }

  private static void serialize(Transaction t, DataOutputView out) throws IOException {
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
  }

  /** Routes as a varint of length + 1 (0 = null), then each route. */
  private static void writeRoutes(HttpRoute[] routes, DataOutputView out) throws IOException {
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

  private static HttpRoute[] readRoutes(DataInputView in) throws IOException {
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

  private static Transaction readTransaction(DataInputView in) throws IOException {
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
    return t;
  }

  private static PodMetadata copy(PodMetadata f) {
    PodMetadata p = new PodMetadata();
    p.name = f.name;
    p.namespace = f.namespace;
    p.labels = f.labels == null ? null : f.labels.clone();
    return p;
  }

  private static Transaction copy(Transaction f) {
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
    return t;
  }

  private static HttpRoute[] copy(HttpRoute[] f) {
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

  private static LatencyHistogram copy(LatencyHistogram f) {
    if (f == null) {
      return null;
    }
    LatencyHistogram h = new LatencyHistogram();
    h.buckets = f.buckets == null ? null : f.buckets.clone();
    h.counts = f.counts == null ? null : f.counts.clone();
    return h;
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
    t.clientRtt = copy(f.clientRtt);
    t.serverTime = copy(f.serverTime);
    return t;
  }

  private static HttpRouteTotals copy(HttpRouteTotals f) {
    HttpRouteTotals h = new HttpRouteTotals();
    h.routes = copy(f.routes);
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

  private static void writeInts(int[] a, DataOutputView out) throws IOException {
    writeVarInt(a == null ? 0 : a.length + 1, out);
    if (a != null) {
      for (int v : a) {
        out.writeInt(v);
      }
    }
  }

  private static int[] readInts(DataInputView in) throws IOException {
    int n = readVarInt(in);
    if (n == 0) {
      return null;
    }
    int[] a = new int[n - 1];
    for (int i = 0; i < a.length; i++) {
      a[i] = in.readInt();
    }
    return a;
  }

  private static void writeLongs(long[] a, DataOutputView out) throws IOException {
    writeVarInt(a == null ? 0 : a.length + 1, out);
    if (a != null) {
      for (long v : a) {
        out.writeLong(v);
      }
    }
  }

  private static long[] readLongs(DataInputView in) throws IOException {
    int n = readVarInt(in);
    if (n == 0) {
      return null;
    }
    long[] a = new long[n - 1];
    for (int i = 0; i < a.length; i++) {
      a[i] = in.readLong();
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
