package io.wattgraph.stream.typeinfo;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Base of the hand-written serializers of the records the job shuffles on every event. Flink's
 * POJO serializer reads and writes each field by reflection; in the correlation benchmark that
 * was ~37% of the CPU (docs/benchmarks/stream-jobs.md). Subclasses write their fields in a fixed
 * order; {@code RecordSerializersTest} fails when a field is added to a record and not here.
 * Changing a layout means a new snapshot version and a reader of the old layout
 * ({@link LayoutSnapshot}), or state written by the old one is not readable.
 */
public abstract class RecordSerializer<T> extends TypeSerializerSingleton<T> {

  @Override
  public boolean isImmutableType() {
    return false;
  }

  @Override
  public T copy(T from, T reuse) {
    return copy(from);
  }

  @Override
  public int getLength() {
    return -1;
  }

  @Override
  public T deserialize(T reuse, DataInputView source) throws IOException {
    return deserialize(source);
  }

  @Override
  public void copy(DataInputView source, DataOutputView target) throws IOException {
    serialize(deserialize(source), target);
  }

  /**
   * Null-safe: a varint of the UTF-8 length + 1 (0 = null), then the bytes. Not Flink's
   * {@code StringValue}: it writes char by char and takes a thread-local buffer per read, ~23% of
   * the correlation CPU after the POJO serializer was gone. Strings are valid UTF-16 here (decoded
   * from Avro), so the UTF-8 round trip is exact.
   */
  static void writeString(String s, DataOutputView out) throws IOException {
    if (s == null) {
      out.writeByte(0);
      return;
    }
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    writeVarInt(b.length + 1, out);
    out.write(b);
  }

  static String readString(DataInputView in) throws IOException {
    int n = readVarInt(in);
    if (n == 0) {
      return null;
    }
    byte[] b = new byte[n - 1];
    in.readFully(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  /** A length (of a string or array): unsigned LEB128, at most 5 bytes. */
  static void writeVarInt(int v, DataOutputView out) throws IOException {
    while ((v & ~0x7F) != 0) {
      out.writeByte((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    out.writeByte(v);
  }

  static int readVarInt(DataInputView in) throws IOException {
    int v = 0;
    for (int shift = 0; shift < 32; shift += 7) {
      int b = in.readByte();
      v |= (b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        if (v < 0) {
          throw new IOException("length " + Integer.toUnsignedString(v) + " out of range");
        }
        return v;
      }
    }
    throw new IOException("length: varint longer than 5 bytes");
  }

  /** Primitive arrays as a varint of length + 1 (0 = null), then the elements. */
  static void writeInts(int[] a, DataOutputView out) throws IOException {
    writeVarInt(a == null ? 0 : a.length + 1, out);
    if (a != null) {
      for (int v : a) {
        out.writeInt(v);
      }
    }
  }

  static int[] readInts(DataInputView in) throws IOException {
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

  static void writeLongs(long[] a, DataOutputView out) throws IOException {
    writeVarInt(a == null ? 0 : a.length + 1, out);
    if (a != null) {
      for (long v : a) {
        out.writeLong(v);
      }
    }
  }

  static long[] readLongs(DataInputView in) throws IOException {
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

  /** An enum constant or null, as its ordinal (-1 for null). */
  static void writeEnum(Enum<?> e, DataOutputView out) throws IOException {
    out.writeByte(e == null ? -1 : e.ordinal());
  }

  static <E extends Enum<E>> E readEnum(E[] values, DataInputView in) throws IOException {
    int i = in.readByte();
    if (i < 0) {
      return null;
    }
    if (i >= values.length) {
      throw new IOException("enum ordinal " + i + " out of range for " + values[0].getDeclaringClass().getSimpleName());
    }
    return values[i];
  }
}
