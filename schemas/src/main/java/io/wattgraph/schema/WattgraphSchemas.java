package io.wattgraph.schema;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.avro.message.SchemaStore;
import org.apache.avro.specific.SpecificData;

/**
 * Encoders and decoders for Wattgraph events in Avro single-object encoding.
 *
 * <p>Decoders know every published version of a schema (schemas/avro/history), so a record
 * written by an older agent is resolved from its fingerprint alone: no registry service.
 */
public final class WattgraphSchemas {

  /** Resources listing the historic schema files; kept in sync by the schemas module's test. */
  static final String HISTORY_INDEX = "wattgraph/avro/history/INDEX";

  private static final SchemaStore.Cache HISTORY = loadHistory();

  private WattgraphSchemas() {}

  public static BinaryMessageEncoder<ConnectionEvent> connectionEventEncoder() {
    return new BinaryMessageEncoder<>(SpecificData.get(), ConnectionEvent.getClassSchema());
  }

  /** A decoder that accepts the current schema and every older version kept in history. */
  public static BinaryMessageDecoder<ConnectionEvent> connectionEventDecoder() {
    return ConnectionEvent.createDecoder(HISTORY);
  }

  /** A ResourceSample decoder that accepts the current schema and every version kept in history. */
  public static BinaryMessageDecoder<ResourceSample> resourceSampleDecoder() {
    return ResourceSample.createDecoder(HISTORY);
  }

  public static BinaryMessageEncoder<WindowMetrics> windowMetricsEncoder() {
    return new BinaryMessageEncoder<>(SpecificData.get(), WindowMetrics.getClassSchema());
  }

  /** A WindowMetrics decoder that accepts the current schema and every version kept in history. */
  public static BinaryMessageDecoder<WindowMetrics> windowMetricsDecoder() {
    return WindowMetrics.createDecoder(HISTORY);
  }

  public static BinaryMessageEncoder<PowerBudget> powerBudgetEncoder() {
    return new BinaryMessageEncoder<>(SpecificData.get(), PowerBudget.getClassSchema());
  }

  /** A PowerBudget decoder that accepts the current schema and every version kept in history. */
  public static BinaryMessageDecoder<PowerBudget> powerBudgetDecoder() {
    return PowerBudget.createDecoder(HISTORY);
  }

  /** A TransactionStats decoder that accepts the current schema and every version kept in history. */
  public static BinaryMessageDecoder<TransactionStats> transactionStatsDecoder() {
    return TransactionStats.createDecoder(HISTORY);
  }

  public static BinaryMessageEncoder<EdgeMetrics> edgeMetricsEncoder() {
    return new BinaryMessageEncoder<>(SpecificData.get(), EdgeMetrics.getClassSchema());
  }

  /** An EdgeMetrics decoder that accepts the current schema and every version kept in history. */
  public static BinaryMessageDecoder<EdgeMetrics> edgeMetricsDecoder() {
    return EdgeMetrics.createDecoder(HISTORY);
  }

  public static BinaryMessageEncoder<NamespaceMetrics> namespaceMetricsEncoder() {
    return new BinaryMessageEncoder<>(SpecificData.get(), NamespaceMetrics.getClassSchema());
  }

  /** A NamespaceMetrics decoder that accepts the current schema and every version kept in history. */
  public static BinaryMessageDecoder<NamespaceMetrics> namespaceMetricsDecoder() {
    return NamespaceMetrics.createDecoder(HISTORY);
  }

  public static BinaryMessageEncoder<CgroupStats> cgroupStatsEncoder() {
    return new BinaryMessageEncoder<>(SpecificData.get(), CgroupStats.getClassSchema());
  }

  /** A CgroupStats decoder that accepts the current schema and every version kept in history. */
  public static BinaryMessageDecoder<CgroupStats> cgroupStatsDecoder() {
    return CgroupStats.createDecoder(HISTORY);
  }

  /** Historic writer schemas known to the decoders (the current one is always known). */
  public static List<Schema> historicSchemas() {
    return readHistory();
  }

  private static SchemaStore.Cache loadHistory() {
    SchemaStore.Cache cache = new SchemaStore.Cache();
    for (Schema s : readHistory()) {
      cache.addSchema(s);
    }
    return cache;
  }

  private static List<Schema> readHistory() {
    List<Schema> schemas = new ArrayList<>();
    ClassLoader cl = WattgraphSchemas.class.getClassLoader();
    try (InputStream index = cl.getResourceAsStream(HISTORY_INDEX)) {
      if (index == null) {
        return schemas;
      }
      for (String line : new String(index.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        String name = line.strip();
        if (name.isEmpty() || name.startsWith("#")) {
          continue;
        }
        try (InputStream in = cl.getResourceAsStream("wattgraph/avro/history/" + name)) {
          if (in == null) {
            throw new IllegalStateException("schema history lists " + name + " but it is not on the classpath");
          }
          schemas.add(new Schema.Parser().parse(in));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading the schema history", e);
    }
    return schemas;
  }
}
