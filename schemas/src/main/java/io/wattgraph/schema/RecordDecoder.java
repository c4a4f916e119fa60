package io.wattgraph.schema;

import java.io.IOException;
import java.util.Arrays;
import org.apache.avro.Conversion;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.message.BadHeaderException;
import org.apache.avro.message.MissingSchemaException;
import org.apache.avro.message.SchemaStore;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;

/**
 * Single-object Avro ({@code C3 01}, CRC-64-AVRO fingerprint little-endian, binary body) to a
 * record of one type, for bytes from anyone who can write a topic.
 *
 * <p>The body is read by Avro's {@link BinaryDecoder} over the record's byte array, which knows how
 * many bytes are left: Avro (1.12.2) then refuses a string or bytes length, and an array or map
 * item count, that the rest of the record cannot hold, before it allocates (EOFException). Avro's
 * own {@code BinaryMessageDecoder} reads the body through an InputStream decoder that does not
 * know, and allocates whatever length a record claims (a 16-byte record can ask for 1.5 GB).
 * Generated classes' {@code customDecode} allocates without these checks, so it is switched off.
 *
 * <p>Not thread-safe (it reuses its decoder): one per thread, e.g. per Flink deserializer.
 */
public final class RecordDecoder<T> {
  static final int HEADER_BYTES = 10;

  private final Schema readerSchema;
  private final long readerFingerprint;
  private final SchemaStore writers;
  private final SpecificData model;
  /** Readers of the writer schemas met so far, by fingerprint (a handful: linear scan, no boxing). */
  private long[] fingerprints = new long[0];
  private SpecificDatumReader<T>[] readers = newReaders(0);
  private BinaryDecoder decoder;

  RecordDecoder(Schema readerSchema, SchemaStore history) {
    this.readerSchema = readerSchema;
    this.readerFingerprint = SchemaNormalization.parsingFingerprint64(readerSchema);
    this.writers = history;
    SpecificData generated = SpecificData.getForSchema(readerSchema);
    this.model = new SpecificData(generated.getClassLoader());
    for (Conversion<?> c : generated.getConversions()) {
      model.addLogicalTypeConversion(c);
    }
    model.setCustomCoders(false);
  }

  /**
   * The record, or an exception saying what is wrong: {@link BadHeaderException} (too short, not
   * single-object), {@link MissingSchemaException} (unknown writer fingerprint) or
   * {@link MalformedRecordException} (the body does not decode: a length past the record's end, a
   * truncated record, an index out of range...).
   */
  public T decode(byte[] record) throws IOException {
    if (record.length < HEADER_BYTES) {
      throw new BadHeaderException("Not enough header bytes: " + record.length + " of " + HEADER_BYTES);
    }
    if (record[0] != (byte) 0xC3 || record[1] != 0x01) {
      throw new BadHeaderException(String.format("Unrecognized header bytes: 0x%02X 0x%02X", record[0], record[1]));
    }
    long fingerprint = 0;
    for (int i = HEADER_BYTES - 1; i >= 2; i--) {
      fingerprint = (fingerprint << 8) | (record[i] & 0xFF);
    }
    SpecificDatumReader<T> reader = readerFor(fingerprint);
    decoder = DecoderFactory.get().binaryDecoder(record, HEADER_BYTES, record.length - HEADER_BYTES, decoder);
    try {
      return reader.read(null, decoder);
    } catch (IOException | RuntimeException e) {
      int at = record.length - Math.max(0, decoder.remainingBytes());
      throw new MalformedRecordException(readerSchema.getName() + " (writer fingerprint " + fingerprint + "): " + e
          + " at byte " + at + " of " + record.length, e);
    }
  }

  private SpecificDatumReader<T> readerFor(long fingerprint) throws MissingSchemaException {
    for (int i = 0; i < fingerprints.length; i++) {
      if (fingerprints[i] == fingerprint) {
        return readers[i];
      }
    }
    Schema writer = fingerprint == readerFingerprint ? readerSchema : writers.findByFingerprint(fingerprint);
    if (writer == null) {
      throw new MissingSchemaException("Cannot resolve schema for fingerprint: " + fingerprint);
    }
    if (!writer.getFullName().equals(readerSchema.getFullName())) {
      throw new MissingSchemaException("Fingerprint " + fingerprint + " is a " + writer.getName() + ", not a "
          + readerSchema.getName());
    }
    SpecificDatumReader<T> reader = new SpecificDatumReader<>(writer, readerSchema, model);
    fingerprints = Arrays.copyOf(fingerprints, fingerprints.length + 1);
    readers = Arrays.copyOf(readers, readers.length + 1);
    fingerprints[fingerprints.length - 1] = fingerprint;
    readers[readers.length - 1] = reader;
    return reader;
  }

  @SuppressWarnings("unchecked")
  private static <T> SpecificDatumReader<T>[] newReaders(int n) {
    return (SpecificDatumReader<T>[]) new SpecificDatumReader<?>[n];
  }
}
