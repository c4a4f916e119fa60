package io.wattgraph.schema;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.avro.Schema;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.avro.message.SchemaStore;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;
import org.apache.avro.util.ClassSecurityValidator;

/**
 * Encoders and decoders for Wattgraph events in Avro single-object encoding.
 *
 * <p>Decoders know every published version of a schema (schemas/avro/history), so a record
 * written by an older agent is resolved from its fingerprint alone: no registry service. Bytes
 * from anyone who can write a topic go through {@link #recordDecoder}: Avro's message decoders
 * below allocate whatever length a record claims (RecordDecoderTest), so they are for the
 * project's own outputs.
 */
public final class WattgraphSchemas {

  /** Resources listing the historic schema files; kept in sync by the schemas module's test. */
  static final String HISTORY_INDEX = "wattgraph/avro/history/INDEX";

  private static final SchemaStore.Cache HISTORY = loadHistory();

  /** Every generated top-level record: their named types are the classes decoders may create. */
  private static final List<Schema> GENERATED = List.of(ConnectionEvent.getClassSchema(),
      ResourceSample.getClassSchema(), ServiceMapping.getClassSchema(), TransactionStats.getClassSchema(),
      WindowMetrics.getClassSchema(), EdgeMetrics.getClassSchema(), NamespaceMetrics.getClassSchema(),
      PowerBudget.getClassSchema(), CgroupStats.getClassSchema());

  static {
    trustGeneratedClasses();
  }

  private WattgraphSchemas() {}

  /**
   * A decoder for untrusted bytes that knows the current schema of {@code current}'s type and
   * every older version kept in history, and refuses a length the record cannot hold before
   * allocating ({@link RecordDecoder}). One per thread.
   */
  public static <T extends SpecificRecord> RecordDecoder<T> recordDecoder(Schema current) {
    return new RecordDecoder<>(current, HISTORY);
  }

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

  /** A ServiceMapping decoder that accepts the current schema and every version kept in history. */
  public static BinaryMessageDecoder<ServiceMapping> serviceMappingDecoder() {
    return ServiceMapping.createDecoder(HISTORY);
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

  /**
   * Avro 1.12 creates a record, enum or fixed class of a schema only when the class is trusted
   * ({@link ClassSecurityValidator}; otherwise SecurityException). Trusted here: exactly the
   * generated classes, added to whatever the JVM already trusts. So decode through this class (the
   * generated {@code getDecoder()} alone works only once this class was loaded).
   */
  private static void trustGeneratedClasses() {
    ClassSecurityValidator.Builder trusted = ClassSecurityValidator.builder();
    Set<String> names = new TreeSet<>();
    for (Schema s : GENERATED) {
      collectNamedTypes(s, names);
    }
    names.forEach(trusted::add);
    ClassSecurityValidator.setGlobal(ClassSecurityValidator.composite(ClassSecurityValidator.getGlobal(), trusted.build()));
  }

  /** Full names of the schema's records, enums and fixed types, nested ones included. */
  static void collectNamedTypes(Schema s, Set<String> names) {
    switch (s.getType()) {
      case RECORD -> {
        if (names.add(s.getFullName())) {
          s.getFields().forEach(f -> collectNamedTypes(f.schema(), names));
        }
      }
      case ENUM, FIXED -> names.add(s.getFullName());
      case ARRAY -> collectNamedTypes(s.getElementType(), names);
      case MAP -> collectNamedTypes(s.getValueType(), names);
      case UNION -> s.getTypes().forEach(t -> collectNamedTypes(t, names));
      default -> { }
    }
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
