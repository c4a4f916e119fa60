package io.wattgraph.stream.sink.neo4j;

import java.io.IOException;
import java.io.Serializable;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;

/**
 * Writes a stream of rows to Neo4j through a {@link Neo4jBatchTarget} built on each task
 * ({@link Neo4jSinkOperator}, {@link Neo4jSinkWriter}): a row is written once the checkpoint after
 * it completed, so a restored job leaves no row in the graph that its state does not hold; the rows
 * not yet written are the operator's state, so a checkpoint never waits for Neo4j.
 */
public final class Neo4jSink {
  private Neo4jSink() {}

  /** Builds the target on the task manager (drivers are not serializable). */
  public interface TargetFactory<R> extends Serializable {
    Neo4jBatchTarget<R> create(Neo4jSettings settings);
  }

  /**
   * Ends {@code rows} in a Neo4j writer; set its uid, name and parallelism on the result. With
   * {@link Neo4jSettings#writesAfterCheckpoints} a row waits for the checkpoint after it.
   */
  public static <R> SingleOutputStreamOperator<Void> sinkTo(DataStream<R> rows, Neo4jSettings settings,
      TargetFactory<R> target) {
    return rows.transform("neo4j", Types.VOID, new Factory<>(settings, target, rowSerializer(rows.getType())));
  }

  /** The rows' serializer in the job, versioned for the operator's state. */
  static <R> SimpleVersionedSerializer<R> rowSerializer(TypeInformation<R> rowType) {
    return new RowSerializer<>(rowType.createSerializer(new SerializerConfigImpl()));
  }

  /** Creates the operator with its mailbox (which it yields to while its buffer is full). */
  static final class Factory<R> extends AbstractStreamOperatorFactory<Void>
      implements OneInputStreamOperatorFactory<R, Void> {
    private static final long serialVersionUID = 1L;
    private final Neo4jSettings settings;
    private final TargetFactory<R> target;
    private final SimpleVersionedSerializer<R> rows;

    Factory(Neo4jSettings settings, TargetFactory<R> target, SimpleVersionedSerializer<R> rows) {
      this.settings = settings;
      this.target = target;
      this.rows = rows;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T extends StreamOperator<Void>> T createStreamOperator(StreamOperatorParameters<Void> parameters) {
      return (T) new Neo4jSinkOperator<>(parameters, settings, target, rows, parameters.getMailboxExecutor());
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
      return Neo4jSinkOperator.class;
    }
  }

  /** A row as the job's serializer for its type writes it between operators. */
  static final class RowSerializer<R> implements SimpleVersionedSerializer<R>, Serializable {
    private static final long serialVersionUID = 1L;
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
