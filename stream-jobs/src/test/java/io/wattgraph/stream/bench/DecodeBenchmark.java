package io.wattgraph.stream.bench;

import io.wattgraph.stream.source.ConnectionEventDeserializer;
import io.wattgraph.stream.source.ResourceSampleDeserializer;
import io.wattgraph.stream.source.ServiceMappingDeserializer;
import io.wattgraph.stream.source.TransactionStatsDeserializer;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * By hand, not in the suite: the four Kafka deserializers on the shared vectors of their types,
 * records per CPU-second and bytes allocated per record (the decode path alone; StreamJobsBenchmark
 * starts after it). Written against the deserializers' public API only, so the same file runs in
 * a build before a change: {@code DecodeBenchmark VECTORS_DIR [RECORDS=2000000]}.
 */
public final class DecodeBenchmark {
  public static void main(String[] args) throws Exception {
    Path vectors = Path.of(args[0]);
    long n = args.length > 1 ? Long.parseLong(args[1]) : 2_000_000L;
    run("ConnectionEvent", new ConnectionEventDeserializer(), vectors.resolve("connection-event"), n);
    run("ResourceSample", new ResourceSampleDeserializer(), vectors.resolve("resource-sample"), n);
    run("TransactionStats", new TransactionStatsDeserializer(), vectors.resolve("transaction-stats"), n);
    run("ServiceMapping", new ServiceMappingDeserializer(), vectors.resolve("service-mapping"), n);
  }

  @SuppressWarnings({"rawtypes", "unchecked"})
  static void run(String name, KafkaRecordDeserializationSchema d, Path dir, long n) throws Exception {
    com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long[] out = new long[1];
    boolean[] dead = new boolean[1];
    Collector c = new Collector() {
      @Override
      public void collect(Object record) {
        out[0]++;
        try {
          dead[0] = record.getClass().getField("deadLetter").get(record) != null;
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException(e);
        }
      }

      @Override
      public void close() {}
    };
    List<ConsumerRecord<byte[], byte[]>> in = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : load(dir)) {
      d.deserialize(r, c);
      if (!dead[0]) {
        in.add(r); // valid records only: dead letters are logged one by one
      }
    }
    for (long i = 0; i < n / 4; i++) { // warm-up
      d.deserialize(in.get((int) (i % in.size())), c);
    }
    long cpu = threads.getCurrentThreadCpuTime();
    long bytes = threads.getCurrentThreadAllocatedBytes();
    for (long i = 0; i < n; i++) {
      d.deserialize(in.get((int) (i % in.size())), c);
    }
    double seconds = (threads.getCurrentThreadCpuTime() - cpu) / 1e9;
    long allocated = threads.getCurrentThreadAllocatedBytes() - bytes;
    System.out.printf("measured %-16s %,12.0f records/CPU-s %,8.1f bytes allocated/record (%d outputs)%n",
        name, n / seconds, (double) allocated / n, out[0]);
  }

  /** The vectors of one type as Kafka records. */
  static List<ConsumerRecord<byte[], byte[]>> load(Path dir) throws Exception {
    Pattern hex = Pattern.compile("\"singleObjectHex\"\\s*:\\s*\"([0-9a-f]+)\"");
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".json")).sorted().toList()) {
        Matcher m = hex.matcher(Files.readString(f));
        if (m.find()) {
          out.add(new ConsumerRecord<>("t", 0, out.size(), null, HexFormat.of().parseHex(m.group(1))));
        }
      }
    }
    return out;
  }
}
