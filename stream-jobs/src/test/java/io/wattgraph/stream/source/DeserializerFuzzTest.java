package io.wattgraph.stream.source;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.PoisonRecords.Poison;
import io.wattgraph.stream.source.PoisonRecordTest.Input;
import io.wattgraph.schema.PoisonRecords;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.kafka.common.utils.ByteUtils;
import org.junit.jupiter.api.Test;

/**
 * Property, over mutants of the shared vectors and the crafted records (flipped and overwritten
 * bytes, lengths and counts spliced in, huge and negative varints, truncation, foreign
 * fingerprints): every input's deserializer turns any bytes into exactly one result, a value or a
 * dead letter with a reason, never throws (Error or Exception), and allocates at most
 * {@link #bound} for it. A fixed seed and a bounded number of tries: seconds, the same inputs every
 * run; a failure found here becomes a record in PoisonRecords. (A loop of our own over our own
 * mutators: jqwik 1.10.1, tried, prints a notice refusing use by AI agents.)
 */
class DeserializerFuzzTest {
  static final int TRIES = 20_000;
  static final long SEED = 20261126L;
  /** Building the reader of a writer schema the decoder meets first: once per schema version. */
  static final long FIRST_OF_A_SCHEMA = 16L << 20;

  /** What decoding may allocate: a refusal's own garbage plus a constant factor of the record. */
  static long bound(byte[] record) {
    return PoisonRecordTest.ALLOCATION_BOUND + 64L * record.length;
  }

  @Test
  void anyBytesAreOneRecordOrOneDeadLetter() throws Exception {
    Map<Input, KafkaRecordDeserializationSchema<? extends Decoded<?>>> deserializers = new EnumMap<>(Input.class);
    Map<Input, long[]> counts = new EnumMap<>(Input.class); // executions, dead letters
    Random random = new Random(SEED);
    for (int t = 0; t < TRIES; t++) {
      Input input = Input.values()[random.nextInt(Input.values().length)];
      Mutant m = mutate(input, new Random(random.nextLong()), 1 + random.nextInt(4));
      var d = deserializers.computeIfAbsent(input, i -> i.deserializer.get());
      long[] c = counts.computeIfAbsent(input, i -> new long[2]);
      // Twice: the first may build the reader of a schema version met for the first time.
      for (long allowed : new long[] {FIRST_OF_A_SCHEMA, bound(m.bytes)}) {
        long before = PoisonRecordTest.THREADS.getCurrentThreadAllocatedBytes();
        List<Decoded<?>> out;
        try {
          out = PoisonRecordTest.deserialize(d, m.bytes);
        } catch (Throwable e) {
          throw new AssertionError("try " + t + ", " + m + " threw", e);
        }
        long allocated = PoisonRecordTest.THREADS.getCurrentThreadAllocatedBytes() - before;
        c[0]++;
        assertEquals(1, out.size(), m::toString);
        Decoded<?> r = out.get(0);
        if (r.value == null) {
          String reason = r.deadLetter.reason;
          assertTrue(reason.startsWith("undecodable: ") || reason.startsWith("invalid: "), () -> m + ": " + reason);
          c[1]++;
        } else {
          assertNull(r.deadLetter, m::toString);
        }
        assertTrue(allocated <= allowed, () -> m + ": allocated " + allocated + " > " + allowed);
      }
    }
    StringBuilder b = new StringBuilder("DeserializerFuzzTest: seed " + SEED);
    counts.forEach((i, c) -> b.append(", ").append(i).append(' ').append(c[0]).append(" executions ")
        .append(c[1]).append(" dead letters"));
    System.out.println(b);
  }

  /** Bytes given to one input's deserializer. */
  record Mutant(Input input, byte[] bytes, String how) {
    @Override
    public String toString() {
      return input + " " + how + ": " + HexFormat.of().formatHex(bytes);
    }
  }

  /** A seed of the input's corpus (its shared vectors and crafted records) with n mutations. */
  static Mutant mutate(Input input, Random random, int n) {
    List<byte[]> corpus = corpus(input);
    byte[] b = corpus.get(random.nextInt(corpus.size()));
    StringBuilder how = new StringBuilder("seed " + corpus.indexOf(b));
    for (int i = 0; i < n; i++) {
      int at = b.length == 0 ? 0 : random.nextInt(b.length);
      switch (random.nextInt(7)) {
        case 0 -> { // flip bits of a byte
          b = b.clone();
          if (b.length > 0) {
            b[at] ^= (byte) (1 + random.nextInt(255));
          }
          how.append(", flip@").append(at);
        }
        case 1 -> { // a length or count spliced in, as a varint
          long v = LENGTHS[random.nextInt(LENGTHS.length)];
          b = splice(b, at, varint(v), random.nextBoolean());
          how.append(", varint ").append(v).append('@').append(at);
        }
        case 2 -> { // truncated
          b = Arrays.copyOf(b, at);
          how.append(", cut@").append(at);
        }
        case 3 -> { // a varint that never ends
          byte[] ff = new byte[1 + random.nextInt(12)];
          Arrays.fill(ff, (byte) 0xFF);
          b = splice(b, at, ff, true);
          how.append(", 0xFF*").append(ff.length).append('@').append(at);
        }
        case 4 -> { // another type's or a random fingerprint
          b = b.clone();
          if (b.length >= 10) {
            long fp = random.nextBoolean() ? random.nextLong() : fingerprintOf(random);
            ByteBuffer.wrap(b, 2, 8).order(ByteOrder.LITTLE_ENDIAN).putLong(fp);
          }
          how.append(", fingerprint");
        }
        case 5 -> { // a slice repeated
          int len = Math.min(b.length - at, 1 + random.nextInt(16));
          b = splice(b, at, Arrays.copyOfRange(b, at, at + len), true);
          how.append(", repeat ").append(len).append('@').append(at);
        }
        default -> { // random bytes overwritten
          b = b.clone();
          for (int k = at; k < Math.min(b.length, at + 1 + random.nextInt(8)); k++) {
            b[k] = (byte) random.nextInt(256);
          }
          how.append(", random@").append(at);
        }
      }
    }
    return new Mutant(input, b, how.toString());
  }

  /** Lengths and counts an attacker tries: around zero, negative, the record's size, huge. */
  static final long[] LENGTHS = {0, 1, 2, 7, 16, 127, 128, 255, 1 << 14, -1, -2, -128, Integer.MAX_VALUE,
      Integer.MAX_VALUE - 8L, Integer.MIN_VALUE, 1_500_000_000L, 1L << 32, Long.MAX_VALUE, Long.MIN_VALUE};

  static byte[] varint(long v) {
    ByteBuffer buf = ByteBuffer.allocate(10);
    ByteUtils.writeVarlong(v, buf);
    return Arrays.copyOf(buf.array(), buf.position());
  }

  /** b with s at {@code at}, inserted or over the bytes there. */
  static byte[] splice(byte[] b, int at, byte[] s, boolean insert) {
    int tail = insert ? at : Math.min(b.length, at + s.length);
    byte[] out = new byte[at + s.length + b.length - tail];
    System.arraycopy(b, 0, out, 0, at);
    System.arraycopy(s, 0, out, at, s.length);
    System.arraycopy(b, tail, out, at + s.length, b.length - tail);
    return out;
  }

  private static final Map<Input, List<byte[]>> CORPUS = new EnumMap<>(Input.class);

  static synchronized List<byte[]> corpus(Input input) {
    return CORPUS.computeIfAbsent(input, i -> {
      List<byte[]> c = new ArrayList<>(PoisonRecords.vectors(i.vectors));
      i.poison.get().stream().map(Poison::bytes).forEach(c::add);
      return c;
    });
  }

  private static long fingerprintOf(Random random) {
    Input other = Input.values()[random.nextInt(Input.values().length)];
    byte[] v = corpus(other).get(0);
    return ByteBuffer.wrap(v, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
  }
}
