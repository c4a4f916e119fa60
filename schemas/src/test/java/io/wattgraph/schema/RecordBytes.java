package io.wattgraph.schema;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.IndexedRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumWriter;

/**
 * Single-object records written by hand, valid or not, as an attacker writes them: a header, the
 * fields of a real record up to a chosen field as Avro encodes them, then whatever comes next.
 */
public final class RecordBytes {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final BinaryEncoder enc = EncoderFactory.get().directBinaryEncoder(out, null);

  private RecordBytes(long fingerprint) {
    out.write(0xC3);
    out.write(0x01);
    out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(fingerprint).array());
  }

  /** The header of records written with {@code writer}. */
  public static RecordBytes of(Schema writer) {
    return new RecordBytes(SchemaNormalization.parsingFingerprint64(writer));
  }

  public static RecordBytes withFingerprint(long fingerprint) {
    return new RecordBytes(fingerprint);
  }

  /** The record's fields before {@code field}, encoded as Avro does. */
  public RecordBytes fieldsBefore(IndexedRecord record, String field) {
    for (Schema.Field f : record.getSchema().getFields()) {
      if (f.name().equals(field)) {
        return this;
      }
      try {
        new SpecificDatumWriter<Object>(f.schema(), SpecificData.get()).write(record.get(f.pos()), enc);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    throw new IllegalArgumentException("no field " + field + " in " + record.getSchema().getName());
  }

  /** A long as Avro writes it (zig-zag varint): a length, a count, an index or a number. */
  public RecordBytes varint(long v) {
    try {
      enc.writeLong(v);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return this;
  }

  public RecordBytes raw(byte... bytes) {
    out.writeBytes(bytes);
    return this;
  }

  public byte[] bytes() {
    return out.toByteArray();
  }
}
