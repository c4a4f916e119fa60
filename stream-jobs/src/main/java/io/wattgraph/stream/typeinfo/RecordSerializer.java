package io.wattgraph.stream.typeinfo;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.types.StringValue;

/**
 * Base of the hand-written serializers of the records the job shuffles on every event. Flink's
 * POJO serializer reads and writes each field by reflection; in the correlation benchmark that
 * was ~37% of the CPU (docs/benchmarks/stream-jobs.md). Subclasses write their fields in a fixed
 * order; {@code RecordSerializersTest} fails when a field is added to a record and not here.
 * Changing a layout means a new snapshot version (state written by the old one is not readable).
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

  /** Null-safe (Flink's string encoding keeps null apart from ""). */
  static void writeString(String s, DataOutputView out) throws IOException {
    StringValue.writeString(s, out);
  }

  static String readString(DataInputView in) throws IOException {
    return StringValue.readString(in);
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
