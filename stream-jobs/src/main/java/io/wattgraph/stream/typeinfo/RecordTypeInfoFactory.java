package io.wattgraph.stream.typeinfo;

import java.lang.reflect.Type;
import java.util.HashMap;
import java.util.Map;
import java.util.ServiceLoader;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/**
 * Named by {@code @TypeInfo} on each record that has a {@link RecordSerializer}. The serializers are
 * found as the services listed in {@code META-INF/services/io.wattgraph.stream.typeinfo.RecordSerializer},
 * so this class names no record: a record depends on it, never the other way round.
 */
public final class RecordTypeInfoFactory<T> extends TypeInfoFactory<T> {
  private static final Map<Class<?>, RecordSerializer<?>> SERIALIZERS = load();

  private static Map<Class<?>, RecordSerializer<?>> load() {
    Map<Class<?>, RecordSerializer<?>> byRecord = new HashMap<>();
    for (RecordSerializer<?> s : ServiceLoader.load(RecordSerializer.class, RecordTypeInfoFactory.class.getClassLoader())) {
      byRecord.put(s.createInstance().getClass(), s);
    }
    return Map.copyOf(byRecord);
  }

  @Override
  @SuppressWarnings("unchecked")
  public TypeInformation<T> createTypeInfo(Type t, Map<String, TypeInformation<?>> generics) {
    RecordSerializer<T> s = (RecordSerializer<T>) SERIALIZERS.get(t);
    if (s == null) {
      throw new IllegalArgumentException("no record serializer for " + t + ": list it in META-INF/services/"
          + RecordSerializer.class.getName());
    }
    return new RecordTypeInfo<>((Class<T>) t, s);
  }
}
