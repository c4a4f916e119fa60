package io.wattgraph.schema;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.message.MissingSchemaException;
import org.apache.avro.SchemaNormalization;
import org.junit.jupiter.api.Test;

/** The evolution rule: the current schema reads every published version, and vice versa. */
class SchemaEvolutionTest {

  /** Every top-level event schema: each must have its published versions in history. */
  private static final List<Schema> CURRENT = List.of(
      ConnectionEvent.getClassSchema(), ResourceSample.getClassSchema(), ServiceMapping.getClassSchema(),
      WindowMetrics.getClassSchema(),
      EdgeMetrics.getClassSchema(),
      NamespaceMetrics.getClassSchema(),
      TransactionStats.getClassSchema(),
      PowerBudget.getClassSchema(),
      CgroupStats.getClassSchema());

  @Test
  void currentSchemasReadAndAreReadByEveryPublishedVersionOfTheirName() {
    List<Schema> history = WattgraphSchemas.historicSchemas();
    for (Schema current : CURRENT) {
      List<Schema> versions = history.stream().filter(h -> h.getFullName().equals(current.getFullName())).toList();
      assertTrue(!versions.isEmpty(), current.getFullName() + " has no published version in schemas/avro/history");
      for (Schema old : versions) {
        assertEquals(SchemaCompatibility.SchemaCompatibilityType.COMPATIBLE,
            SchemaCompatibility.checkReaderWriterCompatibility(current, old).getType(),
            "current " + current.getFullName() + " cannot read a published version");
        assertEquals(SchemaCompatibility.SchemaCompatibilityType.COMPATIBLE,
            SchemaCompatibility.checkReaderWriterCompatibility(old, current).getType(),
            "a published version of " + current.getFullName() + " cannot read the current one");
      }
    }
    for (Schema old : history) {
      assertTrue(CURRENT.stream().anyMatch(c -> c.getFullName().equals(old.getFullName())),
          "history holds " + old.getFullName() + ", which no current schema has");
    }
  }

  @Test
  void unknownFingerprintIsRejectedWithAClearError() {
    byte[] bogus = new byte[] {(byte) 0xC3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0};
    assertThrows(MissingSchemaException.class,
        () -> WattgraphSchemas.connectionEventDecoder().decode(bogus));
  }

  @Test
  void aFutureWriterWithAnAddedFieldIsReadWhenItsSchemaIsKnown() throws IOException {
    // A hypothetical later version that adds a defaulted field, written by a newer agent.
    Schema v2 = new Schema.Parser().parse(ConnectionEvent.getClassSchema().toString()
        .replace("{\"name\":\"bytesReceived\"", "{\"name\":\"retransmits\",\"type\":\"long\",\"default\":0},{\"name\":\"bytesReceived\""));
    GenericRecord r = new GenericData.Record(v2);
    ConnectionEvent base = TestVectorsTest.fromJson(new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree("{\"kind\":\"OPENED\",\"hostId\":\"h\",\"eventTimeNs\":1,\"localAddress\":\"10.0.0.1\",\"localPort\":1,"
            + "\"remoteAddress\":\"10.0.0.2\",\"remotePort\":2,\"role\":\"CLIENT\",\"pid\":3,\"tgid\":3,\"processStartTimeNs\":4,"
            + "\"comm\":\"c\",\"cmdline\":null,\"cgroupId\":5,\"containerId\":null,\"netnsInode\":6,\"socketCookie\":7,"
            + "\"bytesSent\":8,\"bytesReceived\":9}"));
    for (Schema.Field f : ConnectionEvent.getClassSchema().getFields()) {
      Object v = base.get(f.pos());
      if (v instanceof Enum<?> en) {
        v = new GenericData.EnumSymbol(v2.getField(f.name()).schema(), en.name());
      } else if (v instanceof IpAddress ip) {
        v = new GenericData.Fixed(v2.getField(f.name()).schema(), ip.bytes());
      }
      r.put(f.name(), v);
    }
    r.put("retransmits", 42L);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(new byte[] {(byte) 0xC3, 0x01});
    out.write(ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN)
        .putLong(SchemaNormalization.parsingFingerprint64(v2)).array());
    BinaryEncoder enc = EncoderFactory.get().binaryEncoder(out, null);
    new GenericDatumWriter<GenericRecord>(v2).write(r, enc);
    enc.flush();

    var decoder = ConnectionEvent.createDecoder(null);
    decoder.addSchema(v2);
    assertEquals(base, decoder.decode(out.toByteArray()));
  }
}
