package io.wattgraph.stream.source;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.PoisonRecords.Poison;
import io.wattgraph.schema.PoisonRecords;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.apache.flink.api.common.functions.util.ListCollector;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Records crafted to crash the job (lengths and counts past the record's end, negative lengths,
 * truncation, foreign fingerprints) against every input's deserializer: each is one dead letter
 * with its reason, decoding it allocates next to nothing, and the next record decodes.
 */
class PoisonRecordTest {
  /** Far below any length the records claim (1.5 GB, 10^9 items), far above a refusal's own garbage. */
  static final long ALLOCATION_BOUND = 1 << 20;

  static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** The job's inputs: deserializer, crafted records, the folder of its type's shared vectors. */
  enum Input {
    CONNECTION_EVENTS(ConnectionEventDeserializer::new, PoisonRecords::connectionEvents, "connection-event"),
    RESOURCE_SAMPLES(ResourceSampleDeserializer::new, PoisonRecords::resourceSamples, "resource-sample"),
    TRANSACTION_STATS(TransactionStatsDeserializer::new, PoisonRecords::transactionStats, "transaction-stats"),
    CGROUP_STATS(CgroupStatsDeserializer::new, PoisonRecords::cgroupStats, "cgroup-stats"),
    SERVICE_MAPPINGS(ServiceMappingDeserializer::new, PoisonRecords::serviceMappings, "service-mapping");

    final Supplier<KafkaRecordDeserializationSchema<? extends Decoded<?>>> deserializer;
    final Supplier<List<Poison>> poison;
    final String vectors;

    Input(Supplier<KafkaRecordDeserializationSchema<? extends Decoded<?>>> deserializer,
        Supplier<List<Poison>> poison, String vectors) {
      this.deserializer = deserializer;
      this.poison = poison;
      this.vectors = vectors;
    }

    byte[] valid() {
      return PoisonRecords.vectors(vectors).get(0);
    }
  }

  /** What one deserializer yields for one Kafka value (key "k", partition 3, offset 17). */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static List<Decoded<?>> deserialize(KafkaRecordDeserializationSchema<? extends Decoded<?>> d,
      byte[] value) throws Exception {
    List out = new ArrayList<>();
    ((KafkaRecordDeserializationSchema) d).deserialize(
        new ConsumerRecord<>("in", 3, 17L, new byte[] {'k'}, value), new ListCollector<>(out));
    return out;
  }

  static Stream<Arguments> poison() {
    return Stream.of(Input.values()).flatMap(i -> i.poison.get().stream().map(p -> Arguments.of(i, p)));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource("poison")
  void aPoisonRecordIsOneDeadLetterWithItsReasonAndTheNextRecordDecodes(Input input, Poison p) throws Exception {
    var d = input.deserializer.get();
    assertNotNull(deserialize(d, input.valid()).get(0).value, "the vector decodes");
    long before = THREADS.getCurrentThreadAllocatedBytes();
    List<Decoded<?>> out = deserialize(d, p.bytes());
    long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
    assertEquals(1, out.size());
    assertNull(out.get(0).value);
    DeadLetter dead = out.get(0).deadLetter;
    assertTrue(dead.reason.startsWith("undecodable: ") && dead.reason.contains(p.expected()),
        () -> "expected '" + p.expected() + "' in " + dead.reason);
    assertArrayEquals(p.bytes(), dead.value);
    assertEquals(17L, dead.offset);
    assertTrue(allocated < ALLOCATION_BOUND, () -> allocated + " bytes allocated for " + dead.reason);
    assertNotNull(deserialize(d, input.valid()).get(0).value, "the record after it decodes");
  }

  /**
   * The reported failure reproduced: in a JVM of 256 MiB (it was seen in 1 GiB), every crafted
   * record of every input is a dead letter. Without the bounds the 16-byte record's 1.5 GB hostId
   * ends this JVM with OutOfMemoryError (exit code 1).
   */
  @Test
  void everyPoisonRecordIsADeadLetterInASmallHeap() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-Xmx256m",
        "-Dwattgraph.testVectors=" + System.getProperty("wattgraph.testVectors"),
        "-cp", System.getProperty("java.class.path"), SmallHeap.class.getName())
        .redirectErrorStream(true).start();
    String output = new String(child.getInputStream().readAllBytes());
    assertTrue(child.waitFor(2, TimeUnit.MINUTES), output);
    assertEquals(0, child.exitValue(), output);
    long expected = Stream.of(Input.values()).mapToLong(i -> i.poison.get().size()).sum();
    assertTrue(output.contains(expected + " dead letters"), output);
  }

  /** The small-heap JVM: every crafted record through its deserializer. */
  public static final class SmallHeap {
    public static void main(String[] args) throws Exception {
      int dead = 0;
      for (Input input : Input.values()) {
        var d = input.deserializer.get();
        for (Poison p : input.poison.get()) {
          List<Decoded<?>> out = deserialize(d, p.bytes());
          DeadLetter l = out.size() == 1 ? out.get(0).deadLetter : null;
          if (l == null || !l.reason.contains(p.expected())) {
            System.out.println(input + " " + p + ": not a dead letter with '" + p.expected() + "': " + out);
            System.exit(2);
          }
          System.out.println(input + " " + p + ": " + l.reason);
          dead++;
        }
      }
      System.out.println(dead + " dead letters");
    }
  }
}
