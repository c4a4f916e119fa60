package io.wattgraph.schema;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.PoisonRecords.Poison;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.SchemaStore;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class RecordDecoderTest {
  /** Far below any length the poison records claim, far above a refusal's own garbage. */
  static final long ALLOCATION_BOUND = 1 << 20;

  static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  static Stream<Arguments> poison() {
    List<Arguments> all = new ArrayList<>();
    PoisonRecords.connectionEvents().forEach(p -> all.add(Arguments.of(ConnectionEvent.getClassSchema(), "connection-event", p)));
    PoisonRecords.resourceSamples().forEach(p -> all.add(Arguments.of(ResourceSample.getClassSchema(), "resource-sample", p)));
    PoisonRecords.transactionStats().forEach(p -> all.add(Arguments.of(TransactionStats.getClassSchema(), "transaction-stats", p)));
    PoisonRecords.serviceMappings().forEach(p -> all.add(Arguments.of(ServiceMapping.getClassSchema(), "service-mapping", p)));
    return all.stream();
  }

  @ParameterizedTest(name = "{1}: {2}")
  @MethodSource("poison")
  void refusesThePoisonRecordBeforeAllocatingAndThenDecodesTheNextRecord(Schema type, String vectors, Poison p)
      throws IOException {
    RecordDecoder<SpecificRecord> decoder = WattgraphSchemas.recordDecoder(type);
    byte[] valid = PoisonRecords.vectors(vectors).get(0);
    SpecificRecord expected = decoder.decode(valid); // builds the reader and resolver first
    long before = THREADS.getCurrentThreadAllocatedBytes();
    Exception e = assertThrows(Exception.class, () -> decoder.decode(p.bytes()));
    long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
    assertTrue(e.toString().contains(p.expected()), () -> "expected '" + p.expected() + "' in " + e);
    assertTrue(allocated < ALLOCATION_BOUND, () -> allocated + " bytes allocated refusing it: " + e);
    assertEquals(expected, decoder.decode(valid), "the reused decoder after a refusal");
  }

  /** The record, byte for byte, and where the refusal says it stopped. */
  @Test
  void theSixteenByteRecordNamesTheLengthAndWhere() {
    byte[] record = PoisonRecords.connectionEvents().get(0).bytes();
    assertEquals(16, record.length);
    IOException e = assertThrows(IOException.class,
        () -> WattgraphSchemas.<ConnectionEvent>recordDecoder(ConnectionEvent.getClassSchema()).decode(record));
    assertEquals("ConnectionEvent (writer fingerprint " + SchemaNormalization.parsingFingerprint64(ConnectionEvent.getClassSchema())
        + "): java.io.EOFException: Attempted to read 1500000000 bytes, but only 0 bytes are available at byte 16 of 16",
        e.getMessage());
  }

  /**
   * Why {@link RecordDecoder} exists: Avro's own message decoder (1.12.2) reads through a stream
   * decoder that does not know the record's size and allocates whatever length it claims. If a
   * later Avro stops doing this, this test fails and the message decoder may do.
   */
  @Test
  void avroMessageDecoderAllocatesTheLengthARecordClaims() {
    int claimed = 64 << 20;
    byte[] record = RecordBytes.of(ConnectionEvent.getClassSchema()).varint(0).varint(claimed).bytes();
    long before = THREADS.getCurrentThreadAllocatedBytes();
    assertThrows(Exception.class, () -> WattgraphSchemas.connectionEventDecoder().decode(record));
    long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
    assertTrue(allocated >= claimed, allocated + " bytes");
  }

  /** No input schema has a bytes field; the bound holds for one all the same. */
  @Test
  void bytesLongerThanTheRecordAreRefused() throws IOException {
    Schema blob = new Schema.Parser().parse("{\"type\":\"record\",\"name\":\"Blob\",\"namespace\":\"test\","
        + "\"fields\":[{\"name\":\"b\",\"type\":\"bytes\"}]}");
    SchemaStore.Cache store = new SchemaStore.Cache();
    RecordDecoder<GenericRecord> decoder = new RecordDecoder<>(blob, store);
    GenericRecord ok = decoder.decode(RecordBytes.of(blob).varint(2).raw((byte) 1, (byte) 2).bytes());
    assertEquals(2, ((java.nio.ByteBuffer) ok.get("b")).remaining());
    long before = THREADS.getCurrentThreadAllocatedBytes();
    IOException e = assertThrows(IOException.class,
        () -> decoder.decode(RecordBytes.of(blob).varint(HUGE).raw((byte) 1).bytes()));
    assertTrue(THREADS.getCurrentThreadAllocatedBytes() - before < ALLOCATION_BOUND);
    assertTrue(e.getMessage().contains("Attempted to read " + HUGE + " bytes, but only 1"), e.getMessage());
    assertTrue(assertThrows(IOException.class, () -> decoder.decode(RecordBytes.of(blob).varint(-5).bytes()))
        .getMessage().contains("Length is negative: -5"));
  }

  static final int HUGE = 1_500_000_000;

  /**
   * Generated code's customDecode does not bound lengths, and Avro's classic (not "fast") reader
   * runs it when the generated classes' model has custom coders on: the bound holds all the same.
   */
  @Test
  void staysBoundedWhenGeneratedCustomCodersAreOn() {
    RecordDecoder<TransactionStats> decoder = WattgraphSchemas.recordDecoder(TransactionStats.getClassSchema());
    SpecificData generated = SpecificData.getForSchema(TransactionStats.getClassSchema());
    generated.setCustomCoders(true);
    generated.setFastReaderEnabled(false);
    try {
      Poison p = PoisonRecords.transactionStats().get(0);
      long before = THREADS.getCurrentThreadAllocatedBytes();
      assertThrows(IOException.class, () -> decoder.decode(p.bytes()));
      assertTrue(THREADS.getCurrentThreadAllocatedBytes() - before < 4 * ALLOCATION_BOUND);
    } finally {
      generated.setFastReaderEnabled(true);
      generated.setCustomCoders(false);
    }
  }

  /**
   * Avro bounds an array's item count by the bytes left only when an item takes at least one
   * byte (null items, empty records and zero-size fixed take none). None of ours may be such.
   */
  @Test
  void everyArrayItemOfEverySchemaTakesAtLeastOneByte() {
    List<Schema> all = new ArrayList<>(WattgraphSchemas.historicSchemas());
    all.add(ConnectionEvent.getClassSchema());
    all.add(ResourceSample.getClassSchema());
    all.add(TransactionStats.getClassSchema());
    all.add(ServiceMapping.getClassSchema());
    all.add(WindowMetrics.getClassSchema());
    all.add(EdgeMetrics.getClassSchema());
    all.add(NamespaceMetrics.getClassSchema());
    all.add(PowerBudget.getClassSchema());
    all.add(CgroupStats.getClassSchema());
    for (Schema s : all) {
      checkArrays(s, s.getName(), new ArrayList<>());
    }
  }

  private static void checkArrays(Schema s, String path, List<Schema> seen) {
    if (seen.contains(s)) {
      return;
    }
    seen.add(s);
    switch (s.getType()) {
      case RECORD -> s.getFields().forEach(f -> checkArrays(f.schema(), path + "." + f.name(), seen));
      case ARRAY -> {
        assertTrue(minBytes(s.getElementType()) > 0, path + ": items may take no byte");
        checkArrays(s.getElementType(), path + "[]", seen);
      }
      case MAP -> checkArrays(s.getValueType(), path + "{}", seen);
      case UNION -> s.getTypes().forEach(t -> checkArrays(t, path, seen));
      default -> { }
    }
  }

  private static int minBytes(Schema s) {
    return switch (s.getType()) {
      case NULL -> 0;
      case FIXED -> s.getFixedSize();
      case RECORD -> s.getFields().stream().mapToInt(f -> minBytes(f.schema())).sum();
      case FLOAT -> 4;
      case DOUBLE -> 8;
      default -> 1; // varints, lengths, counts, enum and union indexes: at least one byte
    };
  }

}
