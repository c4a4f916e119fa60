package io.wattgraph.schema;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.avro.Schema;

/**
 * Records an attacker who can write a topic sends, per input type of the stream jobs, each with a
 * fragment of the message its refusal must carry. The first is the 16-byte record. (A map
 * is not sized up front by Avro's reader: it grows per entry read, so a huge entry count ends in
 * EOFException at the record's end.)
 */
public final class PoisonRecords {
  /** A bad record, what it tries, and a fragment of the reason it must be refused with. */
  public record Poison(String name, byte[] bytes, String expected) {
    @Override
    public String toString() {
      return name;
    }
  }

  static final int HUGE_LENGTH = 1_500_000_000;
  static final int HUGE_COUNT = 1_000_000_000;

  private PoisonRecords() {}

  public static List<Poison> connectionEvents() {
    Schema s = ConnectionEvent.getClassSchema();
    ConnectionEvent valid = decode(vectors("connection-event").get(0), WattgraphSchemas.connectionEventDecoder()::decode);
    List<Poison> p = new ArrayList<>(List.of(
        new Poison("hostId length 1,500,000,000 (16 bytes)", RecordBytes.of(s).varint(0).varint(HUGE_LENGTH).bytes(),
            "Attempted to read 1500000000 bytes, but only 0 bytes are available"),
        new Poison("hostId length -1", RecordBytes.of(s).varint(0).varint(-1).bytes(), "Length is negative: -1"),
        new Poison("comm length past the end", RecordBytes.of(s).fieldsBefore(valid, "comm").varint(1000)
            .raw((byte) 'a', (byte) 'b', (byte) 'c').bytes(), "Attempted to read 1000 bytes, but only 3"),
        new Poison("varint of 11 bytes", RecordBytes.of(s).fieldsBefore(valid, "eventTimeNs")
            .raw(filled(11, (byte) 0xFF)).bytes(), "Invalid long encoding"),
        new Poison("kind index 7 of 3", RecordBytes.of(s).varint(7).varint(1).raw((byte) 'h').bytes(), "7"),
        new Poison("ResourceSample fingerprint", RecordBytes.of(ResourceSample.getClassSchema()).varint(0).bytes(),
            "is a ResourceSample, not a ConnectionEvent")));
    p.addAll(common(vectors("connection-event").get(0)));
    return p;
  }

  public static List<Poison> resourceSamples() {
    Schema s = ResourceSample.getClassSchema();
    byte[] bytes = vectors("resource-sample").get(4);
    ResourceSample valid = decode(bytes, WattgraphSchemas.resourceSampleDecoder()::decode);
    List<Poison> p = new ArrayList<>(List.of(
        new Poison("hostId length 1,500,000,000", RecordBytes.of(s).varint(0).varint(HUGE_LENGTH).bytes(),
            "Attempted to read 1500000000 bytes"),
        new Poison("podLabels map of 1,000,000,000 entries", RecordBytes.of(s).fieldsBefore(valid, "podLabels")
            .varint(HUGE_COUNT).bytes(), "EOFException"),
        new Poison("podLabels block of -1,000,000,000 entries, byte size 2^62", RecordBytes.of(s)
            .fieldsBefore(valid, "podLabels").varint(-HUGE_COUNT).varint(1L << 62).bytes(), "EOFException")));
    p.addAll(common(bytes));
    return p;
  }

  public static List<Poison> transactionStats() {
    Schema s = TransactionStats.getClassSchema();
    byte[] bytes = vectors("transaction-stats").get(4);
    TransactionStats valid = decode(bytes, WattgraphSchemas.transactionStatsDecoder()::decode);
    List<Poison> p = new ArrayList<>(List.of(
        new Poison("clientRttBuckets array of 1,000,000,000 ints", RecordBytes.of(s)
            .fieldsBefore(valid, "clientRttBuckets").varint(HUGE_COUNT).bytes(), "1000000000"),
        new Poison("clientRttBuckets block of -1,000,000,000 ints, byte size 2^62", RecordBytes.of(s)
            .fieldsBefore(valid, "clientRttBuckets").varint(-HUGE_COUNT).varint(1L << 62).bytes(), "1000000000"),
        new Poison("httpRoutes array of 1,000,000,000 records", RecordBytes.of(s).fieldsBefore(valid, "httpRoutes")
            .varint(HUGE_COUNT).bytes(), "1000000000"),
        new Poison("comm length 1,500,000,000", RecordBytes.of(s).fieldsBefore(valid, "comm").varint(HUGE_LENGTH)
            .bytes(), "Attempted to read 1500000000 bytes")));
    p.addAll(common(bytes));
    return p;
  }

  public static List<Poison> cgroupStats() {
    Schema s = CgroupStats.getClassSchema();
    byte[] bytes = vectors("cgroup-stats").get(3);
    CgroupStats valid = decode(bytes, WattgraphSchemas.cgroupStatsDecoder()::decode);
    List<Poison> p = new ArrayList<>(List.of(
        new Poison("hostId length 1,500,000,000", RecordBytes.of(s).varint(HUGE_LENGTH).bytes(),
            "Attempted to read 1500000000 bytes"),
        new Poison("podLabels map of 1,000,000,000 entries", RecordBytes.of(s).fieldsBefore(valid, "podLabels")
            .varint(HUGE_COUNT).bytes(), "EOFException")));
    p.addAll(common(bytes));
    return p;
  }

  public static List<Poison> serviceMappings() {
    Schema s = ServiceMapping.getClassSchema();
    byte[] bytes = vectors("service-mapping").get(0);
    ServiceMapping valid = decode(bytes, WattgraphSchemas.serviceMappingDecoder()::decode);
    List<Poison> p = new ArrayList<>(List.of(
        new Poison("vip length 1,500,000,000", RecordBytes.of(s).varint(HUGE_LENGTH).bytes(),
            "Attempted to read 1500000000 bytes"),
        new Poison("backends array of 1,000,000,000 records", RecordBytes.of(s).fieldsBefore(valid, "backends")
            .varint(HUGE_COUNT).bytes(), "1000000000")));
    p.addAll(common(bytes));
    return p;
  }

  /** For every type: a truncated valid record, an unknown fingerprint, a short or foreign header. */
  private static List<Poison> common(byte[] valid) {
    return List.of(
        new Poison("truncated to 60 %", Arrays.copyOf(valid, valid.length * 6 / 10), "EOFException"),
        new Poison("unknown fingerprint", RecordBytes.withFingerprint(0x0102030405060708L).varint(0).bytes(),
            "Cannot resolve schema for fingerprint"),
        new Poison("5-byte record", new byte[] {(byte) 0xC3, 0x01, 1, 2, 3}, "Not enough header bytes"),
        new Poison("not single-object", filled(12, (byte) 0x42), "Unrecognized header bytes"));
  }

  /** The bytes of the shared vectors of a folder (schemas/test-vectors/NAME), in file order. */
  public static List<byte[]> vectors(String folder) {
    Path dir = Path.of(System.getProperty("wattgraph.testVectors", "test-vectors")).resolve(folder);
    Pattern hex = Pattern.compile("\"singleObjectHex\"\\s*:\\s*\"([0-9a-f]+)\"");
    try (Stream<Path> files = Files.list(dir)) {
      List<byte[]> out = new ArrayList<>();
      for (Path f : files.filter(p -> p.toString().endsWith(".json")).sorted().toList()) {
        Matcher m = hex.matcher(Files.readString(f));
        if (m.find()) {
          out.add(HexFormat.of().parseHex(m.group(1)));
        }
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("reading the vectors under " + dir.toAbsolutePath(), e);
    }
  }

  private interface Decode<T> {
    T decode(byte[] bytes) throws IOException;
  }

  private static <T> T decode(byte[] bytes, Decode<T> d) {
    try {
      return d.decode(bytes);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static byte[] filled(int n, byte b) {
    byte[] out = new byte[n];
    Arrays.fill(out, b);
    return out;
  }
}
