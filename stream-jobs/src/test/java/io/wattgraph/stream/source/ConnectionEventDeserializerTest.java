package io.wattgraph.stream.source;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionNat;
import io.wattgraph.schema.ConnectionRole;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.stream.ConnectionState;
import io.wattgraph.stream.ConnectionStats;
import io.wattgraph.stream.CorrelationJobIT;
import io.wattgraph.stream.EdgeTotals;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.Side;
import io.wattgraph.stream.StreamJobHarness;
import io.wattgraph.stream.connection.ConnectionUpdate;
import io.wattgraph.stream.connection.EdgeRow;
import io.wattgraph.stream.connection.GraphNode;
import io.wattgraph.stream.typeinfo.RecordTypeInfo;
import java.io.InputStream;
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
import org.apache.flink.api.common.functions.util.ListCollector;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

class ConnectionEventDeserializerTest {

  static List<Decoded<Observation>> decodeAll(byte[] value) {
    List<Decoded<Observation>> out = new ArrayList<>();
    new ConnectionEventDeserializer().deserialize(
        new ConsumerRecord<>("t", 3, 17L, new byte[] {'k'}, value), new ListCollector<>(out));
    return out;
  }

  static List<Observation> decode(byte[] value) {
    return decodeAll(value).stream().filter(d -> d.value != null).map(d -> d.value).toList();
  }

  static DeadLetter deadLetter(byte[] value) {
    List<Decoded<Observation>> out = decodeAll(value);
    assertEquals(1, out.size());
    assertEquals(null, out.get(0).value);
    DeadLetter d = out.get(0).deadLetter;
    assertEquals("t", d.topic);
    assertEquals(3, d.partition);
    assertEquals(17L, d.offset);
    assertArrayEquals(new byte[] {'k'}, d.key);
    assertArrayEquals(value, d.value);
    return d;
  }

  @Test
  void decodesSingleObjectEncodingIntoAnObservation() throws Exception {
    ConnectionEvent e = CorrelationJobIT.event("host-a", 42, "curl", null, null, ConnectionEventKind.CLOSED,
        ConnectionRole.SERVER, "::1", 8080, "2001:db8::7", 51000, 123, 5, 6, 99);
    List<Observation> out = decode(CorrelationJobIT.encode(e));
    assertEquals(1, out.size());
    Observation o = out.get(0);
    assertEquals("host-a", o.hostId);
    assertTrue(o.closed);
    assertEquals(Role.SERVER, o.role);
    assertEquals("::1", o.localIp);
    assertEquals("2001:db8::7", o.remoteIp);
    assertEquals(8080, o.localPort);
    assertEquals(42, o.tgid);
    assertEquals(99, o.socketCookie);
    assertEquals(5, o.bytesSent);
    assertEquals(6, o.bytesReceived);
  }

  @Test
  void whatDoesNotDecodeBecomesADeadLetterWithItsReason() {
    assertTrue(deadLetter(new byte[] {1, 2, 3}).reason.startsWith("undecodable: "));
    String unknown = deadLetter(new byte[] {(byte) 0xC3, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 9}).reason;
    assertTrue(unknown.contains("MissingSchemaException"), unknown);
    assertEquals("undecodable: null value", deadLetter(null).reason);
  }

  @Test
  void invalidValuesBecomeDeadLetters() throws Exception {
    ConnectionEvent e = CorrelationJobIT.event("host-a", 42, "curl", null, null, ConnectionEventKind.SNAPSHOT,
        ConnectionRole.CLIENT, "10.0.0.1", 70000, "10.0.0.2", 80, 123, 5, 6, 99);
    assertEquals("invalid: localPort 70000 out of range 0..65535", deadLetter(CorrelationJobIT.encode(e)).reason);
    e.setLocalPort(4000);
    e.setRemotePort(-1);
    assertEquals("invalid: remotePort -1 out of range 0..65535", deadLetter(CorrelationJobIT.encode(e)).reason);
    e.setRemotePort(80);
    e.setBytesSent(-5);
    assertTrue(deadLetter(CorrelationJobIT.encode(e)).reason.startsWith("invalid: negative byte counter"));
    e.setBytesSent(5);
    e.setHostId(" ");
    assertEquals("invalid: empty hostId", deadLetter(CorrelationJobIT.encode(e)).reason);
    e.setHostId("host-a");
    assertEquals(1, decode(CorrelationJobIT.encode(e)).size());
  }

  /** The shared vector of a server end kept by load shedding with probability 0.25 (the agent's own encoding). */
  @Test
  void decodesTheKeepProbabilityOfTheSharedV3Vector() throws Exception {
    String json = Files.readString(Path.of("../schemas/test-vectors/connection-event/07-server-sampled.json"));
    Matcher hex = Pattern.compile("\"singleObjectHex\"\\s*:\\s*\"([0-9a-f]+)\"").matcher(json);
    assertTrue(hex.find());
    Observation o = decode(HexFormat.of().parseHex(hex.group(1))).get(0);
    assertEquals(0.25, o.keepProbability);
    assertEquals(Role.SERVER, o.role);
    assertEquals(90, o.socketCookie);
  }

  /** Records of agents before v3 were never sampled: they decode with keepProbability 1. */
  @Test
  void aV2RecordWasNotSampled() throws Exception {
    ConnectionEvent e = natClient();
    e.setKeepProbability(0.5); // not in v2: must not survive the old writer schema
    Schema v2;
    try (InputStream in = getClass().getResourceAsStream("/wattgraph/avro/history/ConnectionEvent-v2.avsc")) {
      v2 = new Schema.Parser().parse(in);
    }
    GenericRecord old = new GenericData.Record(v2);
    for (Schema.Field f : v2.getFields()) {
      old.put(f.name(), e.get(f.name()));
    }
    byte[] bytes = StreamJobHarness.bytes(new BinaryMessageEncoder<GenericRecord>(GenericData.get(), v2).encode(old));
    Observation o = decode(bytes).get(0);
    assertEquals(1.0, o.keepProbability);
    assertEquals("10.244.2.9", o.remoteIp, "the v2 fields are read");
    assertEquals(0.5, decode(CorrelationJobIT.encode(e)).get(0).keepProbability);
  }

  @Test
  void aKeepProbabilityOutsideZeroToOneIsADeadLetter() throws Exception {
    ConnectionEvent e = natClient();
    for (double p : new double[] {1.5, -0.25, Double.NaN}) {
      e.setKeepProbability(p);
      assertEquals("invalid: keepProbability " + p + " outside 0..1", deadLetter(CorrelationJobIT.encode(e)).reason);
    }
    for (double p : new double[] {0, 1}) {
      e.setKeepProbability(p);
      assertEquals(p, decode(CorrelationJobIT.encode(e)).get(0).keepProbability);
    }
  }

  /** A client of Service VIP 10.96.0.10:80 on a host whose kernel applied DNAT to a backend and SNAT. */
  static ConnectionEvent natClient() {
    ConnectionEvent e = CorrelationJobIT.event("node-1", 42, "curl", null, null, ConnectionEventKind.OPENED,
        ConnectionRole.CLIENT, "10.244.1.5", 43210, "10.96.0.10", 80, 123, 5, 6, 99);
    e.setNat(nat("192.0.2.7", 61000, "10.244.2.9", 8080));
    return e;
  }

  static ConnectionNat nat(String localIp, int localPort, String remoteIp, int remotePort) {
    return ConnectionNat.newBuilder()
        .setLocalAddress(IpAddresses.parse(localIp)).setLocalPort(localPort)
        .setRemoteAddress(IpAddresses.parse(remoteIp)).setRemotePort(remotePort).build();
  }

  @Test
  void aTranslatedClientIsObservedAtTheEndpointsItsPeerSees() throws Exception {
    List<Observation> out = decode(CorrelationJobIT.encode(natClient()));
    assertEquals(1, out.size());
    Observation o = out.get(0);
    assertEquals("192.0.2.7", o.localIp);
    assertEquals(61000, o.localPort);
    assertEquals("10.244.2.9", o.remoteIp);
    assertEquals(8080, o.remotePort);
    assertEquals(Role.CLIENT, o.role);
    assertEquals(99, o.socketCookie);
    // The backend's view of the same connection: SNAT address as client.
    Observation backend = Observations.obs("node-2", 7, Role.SERVER, "10.244.2.9", 8080, "192.0.2.7", 61000, 2, 0, 0);
    assertEquals(backend.connectionKey(), o.connectionKey());
  }

  @Test
  void withoutNatTheSocketsOwnEndpointsStay() throws Exception {
    ConnectionEvent e = natClient();
    e.setNat(null);
    Observation o = decode(CorrelationJobIT.encode(e)).get(0);
    assertEquals("10.244.1.5", o.localIp);
    assertEquals(43210, o.localPort);
    assertEquals("10.96.0.10", o.remoteIp);
    assertEquals(80, o.remotePort);
  }

  @Test
  void invalidNatBecomesADeadLetterNamingTheField() throws Exception {
    ConnectionEvent e = natClient();
    e.getNat().setRemotePort(70000);
    assertEquals("invalid: nat.remotePort 70000 out of range 0..65535", deadLetter(CorrelationJobIT.encode(e)).reason);
    e.getNat().setRemotePort(8080);
    e.getNat().setLocalPort(-1);
    assertEquals("invalid: nat.localPort -1 out of range 0..65535", deadLetter(CorrelationJobIT.encode(e)).reason);
    e.getNat().setLocalPort(61000);
    e.getNat().setRemoteAddress(null); // cannot be encoded: only a record built in memory has it
    assertEquals("invalid: missing nat.remoteAddress", ConnectionEventDeserializer.invalidReason(e));
    e.getNat().setLocalAddress(null);
    assertEquals("invalid: missing nat.localAddress", ConnectionEventDeserializer.invalidReason(e));
  }

  @Test
  void bothEndsShareTheConnectionKey() {
    Observation c = Observations.obs("a", 1, Role.CLIENT, "10.0.0.1", 40000, "10.0.0.2", 80, 1, 0, 0);
    Observation s = Observations.obs("b", 2, Role.SERVER, "10.0.0.2", 80, "10.0.0.1", 40000, 1, 0, 0);
    assertEquals(c.connectionKey(), s.connectionKey());
    assertTrue(c.localIsLow());
    assertFalse(s.localIsLow());
  }

  /** Kryo fallback would be slow and make state evolution impossible. */
  @Test
  void streamAndStateTypesArePojosOrHaveSerializersOfTheirOwn() {
    // Never Kryo: POJOs, or the hand-written serializers of the records shuffled per event.
    for (TypeInformation<?> t : List.of(new ConnectionEventDeserializer().getProducedType(),
        new ResourceSampleDeserializer().getProducedType(), new TransactionStatsDeserializer().getProducedType(),
        new CgroupStatsDeserializer().getProducedType(), new ServiceMappingDeserializer().getProducedType())) {
      assertInstanceOf(PojoTypeInfo.class, t, t.toString());
    }
    for (Class<?> c : List.of(DeadLetter.class, EdgeRow.class, ConnectionState.class,
        EdgeTotals.class, ConnectionStats.class, Side.class)) {
      assertInstanceOf(PojoTypeInfo.class, TypeInformation.of(c), c.getName());
    }
    for (Class<?> c : List.of(Observation.class, ConnectionUpdate.class, GraphNode.class)) {
      assertInstanceOf(RecordTypeInfo.class, TypeInformation.of(c), c.getName());
    }
  }
}
