package io.wattgraph.stream.sink.neo4j;

import java.io.IOException;
import java.io.Serializable;
import java.util.Collection;
import java.util.List;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/**
 * Sink V2 (Flink 2 has no SinkFunction) writing rows to Neo4j through a {@link Neo4jBatchTarget}
 * built on each task; see {@link Neo4jSinkWriter}. The rows not yet written at a checkpoint are the
 * writer's state, so a checkpoint never waits for Neo4j and a restore writes them.
 */
public class Neo4jSink<R> implements Sink<R>, SupportsWriterState<R, R> {
  private static final long serialVersionUID = 1L;

  /** Builds the target on the task manager (drivers are not serializable). */
  public interface TargetFactory<R> extends Serializable {
    Neo4jBatchTarget<R> create(Neo4jSettings settings);
  }

  private final Neo4jSettings settings;
  private final TypeInformation<R> rowType;
  private final TargetFactory<R> target;

  /** {@code rowType}: the rows' type in the job (its serializer writes them into checkpoints). */
  public Neo4jSink(Neo4jSettings settings, TypeInformation<R> rowType, TargetFactory<R> target) {
    this.settings = settings;
    this.rowType = rowType;
    this.target = target;
  }

  @Override
  public StatefulSinkWriter<R, R> createWriter(WriterInitContext context) {
    return restoreWriter(context, List.of());
  }

  @Override
  public StatefulSinkWriter<R, R> restoreWriter(WriterInitContext context, Collection<R> unwritten) {
    Neo4jBatchTarget<R> graph = target.create(settings);
    graph.registerMetrics(context.metricGroup());
    return new Neo4jSinkWriter<>(settings, graph, context.getProcessingTimeService(),
        context.getMailboxExecutor(), context.metricGroup().getNumRecordsSendCounter(), unwritten);
  }

  @Override
  public SimpleVersionedSerializer<R> getWriterStateSerializer() {
    return new RowSerializer<>(rowType.createSerializer(new SerializerConfigImpl()));
  }

  /** A row as the job's serializer for its type writes it between operators. */
  static final class RowSerializer<R> implements SimpleVersionedSerializer<R> {
    private final TypeSerializer<R> rows;

    RowSerializer(TypeSerializer<R> rows) {
      this.rows = rows;
    }

    @Override
    public int getVersion() {
      return 1;
    }

    @Override
    public byte[] serialize(R row) throws IOException {
      DataOutputSerializer out = new DataOutputSerializer(256);
      rows.serialize(row, out);
      return out.getCopyOfBuffer();
    }

    @Override
    public R deserialize(int version, byte[] bytes) throws IOException {
      if (version != 1) {
        throw new IOException("Neo4j sink state of version " + version + " (this build reads 1)");
      }
      return rows.deserialize(new DataInputDeserializer(bytes));
    }
  }
}
