package io.wattgraph.stream.source;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.ResourceScope;
import io.wattgraph.stream.CorrelationJobIT;
import io.wattgraph.stream.ResourceMetricsIT;
import io.wattgraph.stream.StreamJobHarness;
import io.wattgraph.stream.window.ResourceWindowsTest;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

class ResourceSampleDeserializerTest {
  static final long T = ResourceMetricsIT.T0;

  static List<Decoded<Sample>> decode(byte[] value) {
    List<Decoded<Sample>> out = new ArrayList<>();
    new ResourceSampleDeserializer().deserialize(
        new ConsumerRecord<>("wattgraph.resources", 0, 5L, "h".getBytes(), value), new ResourceWindowsTest.ListCollector<>(out));
    assertEquals(1, out.size());
    return out;
  }

  static byte[] encode(ResourceSample s) throws Exception {
    ByteBuffer b = ResourceSample.getEncoder().encode(s);
    byte[] bytes = new byte[b.remaining()];
    b.get(bytes);
    return bytes;
  }

  @Test
  void decodesAValidProcessSample() throws Exception {
    ResourceSample s = ResourceMetricsIT.sample(ResourceScope.PROCESS, "host-a", T + 1_000_000_000L, 5, 1.5, true, 2, 1);
    s.setTgid(7);
    s.setProcessStartTimeNs(99);
    s.setComm("sh");
    Sample d = decode(encode(s)).get(0).value;
    assertEquals("PROCESS", d.scope);
    assertEquals(7, d.tgid);
    assertEquals(99, d.processStartTimeNs);
    assertEquals(5, d.cpuTimeNs);
    assertTrue(d.measured);
    assertEquals(T / 1_000_000L + 999, d.eventTimeMs(), "an interval ending on a second belongs to that second");
  }

  /** The shared vector of a v3 GROUP record with pod metadata (the agent's own encoding). */
  @Test
  void decodesPodMetadataOfTheSharedV3Vector() throws Exception {
    String json = Files.readString(Path.of("../schemas/test-vectors/resource-sample/05-group-pod-names.json"));
    Matcher hex = Pattern.compile("\"singleObjectHex\"\\s*:\\s*\"([0-9a-f]+)\"").matcher(json);
    assertTrue(hex.find());
    Sample d = decode(HexFormat.of().parseHex(hex.group(1))).get(0).value;
    assertEquals("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", d.podUid);
    assertEquals("checkout-5f7c9-x2x4q", d.pod.name);
    assertEquals("sh\u00f6p", d.pod.namespace);
    assertArrayEquals(new String[] {"app=checkout", "app.kubernetes.io/name=checkout"}, d.pod.labels);
  }

  /** A record written with ResourceSample v2 (no pod metadata fields) decodes with none. */
  @Test
  void aV2RecordHasNoPodMetadata() throws Exception {
    ResourceSample s = ResourceMetricsIT.sample(ResourceScope.GROUP, "h", T, 5, 1.5, true, 2, 1);
    s.setPodUid("pod-1");
    Schema v2;
    try (InputStream in = getClass().getResourceAsStream("/wattgraph/avro/history/ResourceSample-v2.avsc")) {
      v2 = new Schema.Parser().parse(in);
    }
    GenericRecord old = new GenericData.Record(v2);
    for (Schema.Field f : v2.getFields()) {
      old.put(f.name(), s.get(f.name()));
    }
    byte[] bytes = StreamJobHarness.bytes(new BinaryMessageEncoder<GenericRecord>(GenericData.get(), v2).encode(old));
    Sample d = decode(bytes).get(0).value;
    assertEquals("pod-1", d.podUid);
    assertNull(d.pod);
  }

  @Test
  void invalidAndUndecodableBecomeDeadLetters() throws Exception {
    ResourceSample noTgid = ResourceMetricsIT.sample(ResourceScope.PROCESS, "h", T, 1, 1, true, 1, 1);
    ResourceSample blankHost = ResourceMetricsIT.sample(ResourceScope.HOST, " ", T, 1, 1, true, 1, 1);
    ResourceSample emptyInterval = ResourceMetricsIT.sample(ResourceScope.HOST, "h", T, 1, 1, true, 1, 1);
    emptyInterval.setIntervalStartNs(T);
    ResourceSample negativeCpu = ResourceMetricsIT.sample(ResourceScope.HOST, "h", T, -1, 1, true, 1, 1);
    ResourceSample nanEnergy = ResourceMetricsIT.sample(ResourceScope.HOST, "h", T, 1, Double.NaN, true, 1, 1);
    ResourceSample blankGroup = ResourceMetricsIT.sample(ResourceScope.GROUP, "h", T, 1, 1, true, 1, 1);
    blankGroup.setGroupId("");
    List<String> reasons = new ArrayList<>();
    for (ResourceSample s : List.of(noTgid, blankHost, emptyInterval, negativeCpu, nanEnergy, blankGroup)) {
      Decoded<Sample> d = decode(encode(s)).get(0);
      assertNull(d.value);
      reasons.add(d.deadLetter.reason);
    }
    assertEquals(List.of("invalid: PROCESS record with tgid 0", "invalid: empty hostId",
        "invalid: interval " + T + ".." + T + " is empty or negative", "invalid: negative cpuTimeNs -1",
        "invalid: energyJoules NaN", "invalid: GROUP record with empty groupId"), reasons);
    Decoded<Sample> garbage = decode(new byte[] {1, 2, 3}).get(0);
    assertTrue(garbage.deadLetter.reason.startsWith("undecodable: "), garbage.deadLetter.reason);
    assertEquals(5L, garbage.deadLetter.offset);
    assertEquals(Long.MIN_VALUE, garbage.eventTimeMs(Sample::eventTimeMs), "a dead letter does not move the watermark");
  }

  /**
   * The collector runs chained downstream operators: their exceptions must fail the task (restart
   * from a checkpoint), not be caught as "undecodable" and drop a good record.
   */
  @Test
  void aDownstreamFailureIsNotADeadLetter() throws Exception {
    ResourceSample s = ResourceMetricsIT.sample(ResourceScope.HOST, "h", T, 1, 1, true, 1, 1);
    org.apache.flink.util.Collector<Decoded<Sample>> failing = new org.apache.flink.util.Collector<>() {
      @Override
      public void collect(Decoded<Sample> d) {
        throw new IllegalStateException("downstream");
      }

      @Override
      public void close() {}
    };
    IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
        () -> new ResourceSampleDeserializer().deserialize(
            new ConsumerRecord<>("wattgraph.resources", 0, 5L, null, encode(s)), failing));
    assertEquals("downstream", e.getMessage());
    org.apache.flink.util.Collector<Decoded<Observation>> failingToo = new org.apache.flink.util.Collector<>() {
      @Override
      public void collect(Decoded<Observation> d) {
        throw new IllegalStateException("downstream");
      }

      @Override
      public void close() {}
    };
    byte[] event = CorrelationJobIT.encode(CorrelationJobIT.curl(io.wattgraph.schema.ConnectionEventKind.OPENED,
        40001, 1, 0, 0));
    org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
        () -> new ConnectionEventDeserializer().deserialize(
            new ConsumerRecord<>("wattgraph.connections", 0, 5L, null, event), failingToo));
  }
}
