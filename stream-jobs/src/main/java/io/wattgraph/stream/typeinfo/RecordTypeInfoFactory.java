package io.wattgraph.stream.typeinfo;

import io.wattgraph.stream.ConnectionUpdate;
import io.wattgraph.stream.EdgeInput;
import io.wattgraph.stream.GraphNode;
import io.wattgraph.stream.MetricInput;
import io.wattgraph.stream.Observation;
import io.wattgraph.stream.Transaction;
import java.lang.reflect.Type;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/** Named by {@code @TypeInfo} on each record that has a {@link RecordSerializer}. */
public final class RecordTypeInfoFactory<T> extends TypeInfoFactory<T> {
  private static final Map<Class<?>, RecordSerializer<?>> SERIALIZERS = Map.of(
      Observation.class, ObservationSerializer.INSTANCE,
      ConnectionUpdate.class, ConnectionUpdateSerializer.INSTANCE,
      GraphNode.class, GraphNodeSerializer.INSTANCE,
      MetricInput.class, MetricInputSerializer.INSTANCE,
      Transaction.class, TransactionSerializer.INSTANCE,
      EdgeInput.class, EdgeInputSerializer.INSTANCE);

  @Override
  @SuppressWarnings("unchecked")
  public TypeInformation<T> createTypeInfo(Type t, Map<String, TypeInformation<?>> generics) {
    RecordSerializer<T> s = (RecordSerializer<T>) SERIALIZERS.get(t);
    if (s == null) {
      throw new IllegalArgumentException("no record serializer for " + t + ": add it to " + RecordTypeInfoFactory.class.getName());
    }
    return new RecordTypeInfo<>((Class<T>) t, s);
  }
}
