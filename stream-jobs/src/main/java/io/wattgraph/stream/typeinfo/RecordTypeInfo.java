package io.wattgraph.stream.typeinfo;

import java.util.Objects;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Type information of a record with a {@link RecordSerializer}: opaque to Flink (no field keys). */
public final class RecordTypeInfo<T> extends TypeInformation<T> {
  private static final long serialVersionUID = 1L;

  private final Class<T> type;
  private final RecordSerializer<T> serializer;

  public RecordTypeInfo(Class<T> type, RecordSerializer<T> serializer) {
    this.type = type;
    this.serializer = serializer;
  }

  @Override
  public boolean isBasicType() {
    return false;
  }

  @Override
  public boolean isTupleType() {
    return false;
  }

  @Override
  public int getArity() {
    return 1;
  }

  @Override
  public int getTotalFields() {
    return 1;
  }

  @Override
  public Class<T> getTypeClass() {
    return type;
  }

  @Override
  public boolean isKeyType() {
    return false;
  }

  @Override
  public TypeSerializer<T> createSerializer(SerializerConfig config) {
    return serializer;
  }

  @Override
  public String toString() {
    return "RecordTypeInfo<" + type.getSimpleName() + ">";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RecordTypeInfo<?> other && other.type == type;
  }

  @Override
  public int hashCode() {
    return Objects.hash(RecordTypeInfo.class, type);
  }

  @Override
  public boolean canEqual(Object o) {
    return o instanceof RecordTypeInfo<?>;
  }
}
