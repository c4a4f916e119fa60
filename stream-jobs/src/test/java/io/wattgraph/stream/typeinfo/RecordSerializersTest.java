package io.wattgraph.stream.typeinfo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.stream.ConnectionState;
import io.wattgraph.stream.ConnectionStats;
import io.wattgraph.stream.EdgeTotals;
import io.wattgraph.stream.HttpRoute;
import io.wattgraph.stream.HttpRouteTotals;
import io.wattgraph.stream.LatencyHistogram;
import io.wattgraph.stream.PodMetadata;
import io.wattgraph.stream.Side;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.TransactionTotals;
import io.wattgraph.stream.connection.ConnectionUpdate;
import io.wattgraph.stream.connection.GraphNode;
import io.wattgraph.stream.source.Observation;
import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.window.MetricInput;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * The hand-written serializers carry every field of their record: each public field is set to a
 * value of its own (by reflection, so a field added to a record later is covered without touching
 * this test) and must come back from serialize/deserialize, copy and the stream-to-stream copy.
 */
class RecordSerializersTest {

  @Test
  void observationKeepsEveryField() throws Exception {
    roundTripsEveryField(Observation.class, ObservationSerializer.INSTANCE);
  }

  @Test
  void graphNodeKeepsEveryField() throws Exception {
    roundTripsEveryField(GraphNode.class, GraphNodeSerializer.INSTANCE);
  }

  @Test
  void connectionUpdateKeepsEveryFieldIncludingItsNodes() throws Exception {
    roundTripsEveryField(ConnectionUpdate.class, ConnectionUpdateSerializer.INSTANCE);
  }

  @Test
  void metricInputKeepsEveryFieldIncludingItsPodTransactionAndRoutes() throws Exception {
    roundTripsEveryField(MetricInput.class, MetricInputSerializer.INSTANCE);
  }

  @Test
  void transactionKeepsEveryFieldIncludingItsRoutes() throws Exception {
    roundTripsEveryField(Transaction.class, TransactionSerializer.INSTANCE);
  }

  @Test
  void edgeInputKeepsEveryFieldIncludingItsTransaction() throws Exception {
    roundTripsEveryField(EdgeInput.class, EdgeInputSerializer.INSTANCE);
  }

  /**
   * Transactions wait in operator state: what the POJO serializer wrote there before Transaction
   * had a serializer of its own (snapshot and record saved from that build, 04798e0) is restored by
   * migration (Flink reads it with the old snapshot's serializer and rewrites it): the state type
   * has gained {@code recordId} since, which old records do not have (0: not deduplicated).
   */
  @Test
  void transactionStateWrittenByThePojoSerializerStaysReadable() throws Exception {
    TypeSerializer<Transaction> state = Transaction.STATE_TYPE.createSerializer(new SerializerConfigImpl());
    TypeSerializerSnapshot<Transaction> old = TypeSerializerSnapshot.readVersionedSnapshot(
        new DataInputDeserializer(resource("/state/transaction-pojo.snapshot")), getClass().getClassLoader());
    TypeSerializerSchemaCompatibility<Transaction> compat = state.snapshotConfiguration().resolveSchemaCompatibility(old);
    assertTrue(compat.isCompatibleAfterMigration(), compat.toString());
    Transaction expected = filled(Transaction.class, false, 1);
    expected.recordId = 0;
    Transaction back = old.restoreSerializer().deserialize(new DataInputDeserializer(resource("/state/transaction-pojo.bin")));
    assertSameFields(Transaction.class, expected, back, "old state read by its own snapshot's serializer");
    DataOutputSerializer migrated = new DataOutputSerializer(256);
    state.serialize(back, migrated);
    assertSameFields(Transaction.class, expected, state.deserialize(new DataInputDeserializer(migrated.getCopyOfBuffer())),
        "rewritten by the state type");
  }

  /**
   * Observations wait in the VIP resolver's state. What the serializer wrote before keepProbability
   * (snapshot and record saved from that build, 53b463a: layout 1, SimpleTypeSerializerSnapshot) is
   * restored by migration, every observation as not sampled.
   */
  @Test
  void observationStateOfLayout1RestoresAsNotSampled() throws Exception {
    Observation expected = filled(Observation.class, false, 1);
    expected.keepProbability = 1.0;
    assertMigrates(ObservationSerializer.INSTANCE, "observation-layout1", Observation.class, expected);
  }

  /** ConnectionUpdates are in no state, but their layout is versioned the same way. */
  @Test
  void connectionUpdateOfLayout1ReadsAsWeighingOne() throws Exception {
    ConnectionUpdate expected = filled(ConnectionUpdate.class, false, 1);
    expected.type = ConnectionUpdate.Type.UPSERT;
    expected.continuation = false;
    expected.weight = 1.0;
    assertMigrates(ConnectionUpdateSerializer.INSTANCE, "connection-update-layout1", ConnectionUpdate.class, expected);
  }

  @Test
  void aSnapshotOfALaterLayoutIsRefusedNamingIt() throws Exception {
    DataOutputSerializer out = new DataOutputSerializer(64);
    out.writeUTF(ObservationSerializer.Snapshot.class.getName());
    out.writeInt(new ObservationSerializer.Snapshot().getCurrentVersion() + 1);
    IOException e = assertThrows(IOException.class, () -> TypeSerializerSnapshot.readVersionedSnapshot(
        new DataInputDeserializer(out.getCopyOfBuffer()), getClass().getClassLoader()));
    assertTrue(e.getMessage().contains("layout 3"), e.getMessage());
  }

  /**
   * The correlator's and edge aggregator's state types are POJOs: state written before the
   * sampling fields (53b463a) restores with them at the values that mean "not sampled", which is
   * what every connection was then: a side kept with 1, a connection counted with weight 1, an edge
   * whose estimate is its count.
   */
  @Test
  void correlatorAndEdgeStateWrittenBeforeSamplingRestoresAsNotSampled() throws Exception {
    var config = new SerializerConfigImpl();
    ConnectionState s = restored(TypeInformation.of(ConnectionState.class).createSerializer(config), "connection-state-pojo");
    Side low = filled(Side.class, false, 1);
    low.keepProbability = 1.0;
    Side high = filled(Side.class, false, 2);
    high.keepProbability = 1.0;
    assertSameFields(Side.class, low, s.low, "low side");
    assertSameFields(Side.class, high, s.high, "high side");
    assertEquals(false, s.withheld);
    assertEquals("10.0.0.1:40000|10.0.0.2:80@host-a/11", s.connectionId);
    assertEquals(3000, s.horizonTimer);

    EdgeTotals t = restored(TypeInformation.of(EdgeTotals.class).createSerializer(config), "edge-totals-pojo");
    assertEquals(7, t.connections);
    assertEquals(7.0, t.connectionsEstimated());
    assertEquals(0, t.connectionsSampled);
    assertEquals(1000, t.bytesClientToServer);
    assertSameFields(GraphNode.class, filled(GraphNode.class, false, 3), t.client, "client");

    ConnectionStats c = restored(TypeInformation.of(ConnectionStats.class).createSerializer(config), "connection-stats-pojo");
    assertEquals(1.0, c.weight);
    assertTrue(c.counted);
    assertEquals(20, c.bytesServerToClient);
  }

  /** Reads a saved snapshot and record as Flink restores state: compatible after migration, then read by the old snapshot. */
  private <T> T restored(TypeSerializer<T> now, String name) throws Exception {
    TypeSerializerSnapshot<T> old = TypeSerializerSnapshot.readVersionedSnapshot(
        new DataInputDeserializer(resource("/state/" + name + ".snapshot")), getClass().getClassLoader());
    TypeSerializerSchemaCompatibility<T> compat = now.snapshotConfiguration().resolveSchemaCompatibility(old);
    assertTrue(compat.isCompatibleAfterMigration(), name + ": " + compat);
    T back = old.restoreSerializer().deserialize(new DataInputDeserializer(resource("/state/" + name + ".bin")));
    DataOutputSerializer migrated = new DataOutputSerializer(256);
    now.serialize(back, migrated);
    return now.deserialize(new DataInputDeserializer(migrated.getCopyOfBuffer()));
  }

  private <T> void assertMigrates(TypeSerializer<T> now, String name, Class<T> type, T expected) throws Exception {
    assertSameFields(type, expected, restored(now, name), name + " restored and rewritten");
  }

  private static byte[] resource(String name) throws IOException {
    try (var in = RecordSerializersTest.class.getResourceAsStream(name)) {
      assertNotNull(in, name);
      return in.readAllBytes();
    }
  }

  @Test
  void flinkPicksThemForTheRecordsAndForRecordsInsidePojos() {
    var config = new SerializerConfigImpl();
    assertEquals(ObservationSerializer.INSTANCE, TypeInformation.of(Observation.class).createSerializer(config));
    assertEquals(GraphNodeSerializer.INSTANCE, TypeInformation.of(GraphNode.class).createSerializer(config));
    assertEquals(ConnectionUpdateSerializer.INSTANCE, TypeInformation.of(ConnectionUpdate.class).createSerializer(config));
    assertEquals(MetricInputSerializer.INSTANCE, TypeInformation.of(MetricInput.class).createSerializer(config));
    assertEquals(TransactionSerializer.INSTANCE, TypeInformation.of(Transaction.class).createSerializer(config));
    assertEquals(EdgeInputSerializer.INSTANCE, TypeInformation.of(EdgeInput.class).createSerializer(config));
    // In operator state, transactions stay POJOs.
    assertInstanceOf(PojoTypeInfo.class, Transaction.STATE_TYPE);
    // Edge state stays a POJO whose node fields use the node serializer.
    PojoTypeInfo<EdgeTotals> totals = assertInstanceOf(PojoTypeInfo.class, TypeInformation.of(EdgeTotals.class));
    assertEquals(GraphNodeSerializer.INSTANCE, totals.getTypeAt("client").createSerializer(config));
  }

  @Test
  void snapshotsRestoreTheSameSerializer() throws Exception {
    for (TypeSerializer<?> s : List.of(ObservationSerializer.INSTANCE, GraphNodeSerializer.INSTANCE, ConnectionUpdateSerializer.INSTANCE,
        MetricInputSerializer.INSTANCE, TransactionSerializer.INSTANCE, EdgeInputSerializer.INSTANCE)) {
      snapshotRoundTrip(s);
    }
  }

  @Test
  void aCorruptEnumIsAnErrorNamingTheType() {
    IOException e = assertThrows(IOException.class,
        () -> RecordSerializer.readEnum(ConnectionUpdate.Type.values(), new DataInputDeserializer(new byte[] {9})));
    assertTrue(e.getMessage().contains("ordinal 9") && e.getMessage().contains("Type"), e.getMessage());
  }

  @Test
  void stringsOfEveryLengthClassAndNullRoundTrip() throws Exception {
    List<String> cases = new ArrayList<>(List.of("", "a", "\u00e9", "\u4e2d\u6587", "\ud83d\ude00 emoji", "x".repeat(127), "y".repeat(128),
        "z".repeat(16_384), "w".repeat(70_000)));
    cases.add(null);
    for (String c : cases) {
      DataOutputSerializer out = new DataOutputSerializer(16);
      RecordSerializer.writeString(c, out);
      out.writeByte(42); // what follows is still in place
      DataInputDeserializer in = new DataInputDeserializer(out.getCopyOfBuffer());
      assertEquals(c, RecordSerializer.readString(in));
      assertEquals(42, in.readByte());
    }
  }

  @Test
  void aCorruptStringLengthIsAnError() {
    byte[] tooLong = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 1};
    IOException e = assertThrows(IOException.class, () -> RecordSerializer.readString(new DataInputDeserializer(tooLong)));
    assertTrue(e.getMessage().contains("length"), e.getMessage());
    byte[] negative = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f};
    e = assertThrows(IOException.class, () -> RecordSerializer.readString(new DataInputDeserializer(negative)));
    assertTrue(e.getMessage().contains("out of range"), e.getMessage());
  }

  private static <T> void snapshotRoundTrip(TypeSerializer<T> s) throws IOException {
    TypeSerializerSnapshot<T> snap = s.snapshotConfiguration();
    DataOutputSerializer out = new DataOutputSerializer(64);
    TypeSerializerSnapshot.writeVersionedSnapshot(out, snap);
    TypeSerializerSnapshot<T> back = TypeSerializerSnapshot.readVersionedSnapshot(
        new DataInputDeserializer(out.getCopyOfBuffer()), RecordSerializersTest.class.getClassLoader());
    assertEquals(s, back.restoreSerializer());
    TypeSerializerSchemaCompatibility<T> compat = s.snapshotConfiguration().resolveSchemaCompatibility(back);
    assertEquals(true, compat.isCompatibleAsIs(), s + ": " + compat);
  }

  private static <T> void roundTripsEveryField(Class<T> type, TypeSerializer<T> s) throws Exception {
    for (boolean nulls : new boolean[] {false, true}) {
      T original = filled(type, nulls, 1);
      DataOutputSerializer out = new DataOutputSerializer(256);
      s.serialize(original, out);
      T back = s.deserialize(new DataInputDeserializer(out.getCopyOfBuffer()));
      assertSameFields(type, original, back, "serialize/deserialize, nulls=" + nulls);
      T copy = s.copy(original);
      assertNotSame(original, copy);
      assertSameFields(type, original, copy, "copy, nulls=" + nulls);
      DataOutputSerializer again = new DataOutputSerializer(256);
      s.copy(new DataInputDeserializer(out.getCopyOfBuffer()), again);
      assertEquals(List.of(toList(out)), List.of(toList(again)), "stream copy, nulls=" + nulls);
    }
  }

  private static List<Byte> toList(DataOutputSerializer out) {
    List<Byte> l = new ArrayList<>();
    for (byte b : out.getCopyOfBuffer()) {
      l.add(b);
    }
    return l;
  }

  /** Every public instance field set: distinct numbers, strings, the last enum constant; nulls for references when asked. */
  static <T> T filled(Class<T> type, boolean nulls, int seed) throws Exception {
    T o = type.getDeclaredConstructor().newInstance();
    int i = seed * 100;
    for (Field f : fields(type)) {
      i++;
      Class<?> t = f.getType();
      if (t == int.class) {
        f.setInt(o, i);
      } else if (t == long.class) {
        f.setLong(o, 1_000_000_000_000L + i);
      } else if (t == boolean.class) {
        f.setBoolean(o, true);
      } else if (t == double.class) {
        f.setDouble(o, i + 0.25);
      } else if (nulls) {
        continue; // every reference field left null
      } else if (t == String.class) {
        f.set(o, f.getName() + "-" + i + "-\u00e9\u4e2d");
      } else if (t == Integer.class) {
        f.set(o, i);
      } else if (t.isEnum()) {
        Object[] c = t.getEnumConstants();
        f.set(o, c[c.length - 1]);
      } else if (t == String[].class) {
        f.set(o, new String[] {"a-" + i, null, "b-" + i});
      } else if (t == int[].class) {
        f.set(o, new int[] {i, i + 1});
      } else if (t == long[].class) {
        f.set(o, new long[] {i, 1L << 40, i + 2});
      } else if (NESTED.contains(t)) {
        f.set(o, filled(t, false, i));
      } else if (t == HttpRoute[].class) {
        f.set(o, new HttpRoute[] {filled(HttpRoute.class, false, i), filled(HttpRoute.class, true, i + 1)});
      } else {
        throw new AssertionError(type.getSimpleName() + "." + f.getName() + ": no test value for " + t);
      }
    }
    return o;
  }

  /** Records inside records: filled and compared field by field, and never shared by a copy. */
  private static final List<Class<?>> NESTED = List.of(GraphNode.class, PodMetadata.class, Transaction.class,
      HttpRoute.class, LatencyHistogram.class, TransactionTotals.class, HttpRouteTotals.class);

  @SuppressWarnings({"unchecked", "rawtypes"})
  static <T> void assertSameFields(Class<T> type, T a, T b, String what) throws Exception {
    for (Field f : fields(type)) {
      Object x = f.get(a);
      Object y = f.get(b);
      String name = what + ": " + type.getSimpleName() + "." + f.getName();
      if (x != null && y != null && NESTED.contains(f.getType())) {
        assertSameFields((Class) f.getType(), x, y, name);
        assertNotSame(x, y, name + " shared, not copied");
      } else if (x != null && y != null && f.getType() == HttpRoute[].class) {
        HttpRoute[] xs = (HttpRoute[]) x;
        HttpRoute[] ys = (HttpRoute[]) y;
        assertEquals(xs.length, ys.length, name);
        for (int k = 0; k < xs.length; k++) {
          assertSameFields(HttpRoute.class, xs[k], ys[k], name + "[" + k + "]");
          assertNotSame(xs[k], ys[k], name + "[" + k + "] shared, not copied");
        }
      } else if (x != null && y != null && f.getType().isArray()) {
        assertTrue(java.util.Objects.deepEquals(x, y), name);
        assertNotSame(x, y, name + " shared, not copied");
      } else {
        assertEquals(x, y, name);
      }
    }
  }

  private static List<Field> fields(Class<?> type) {
    List<Field> l = new ArrayList<>();
    for (Field f : type.getDeclaredFields()) {
      if (!Modifier.isStatic(f.getModifiers()) && Modifier.isPublic(f.getModifiers())) {
        l.add(f);
      }
    }
    return l;
  }
}
