package io.wattgraph.stream.vip;

import static io.wattgraph.stream.source.Observations.closed;
import static io.wattgraph.stream.source.Observations.obs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.ServiceBackend;
import io.wattgraph.schema.ServiceMapping;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.Role;
import io.wattgraph.stream.ServiceMappingUpdate;
import io.wattgraph.stream.source.Decoded;
import io.wattgraph.stream.source.Observation;
import io.wattgraph.stream.source.ServiceMappingDeserializer;
import io.wattgraph.stream.window.ResourceWindowsTest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.util.KeyedBroadcastOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** VIP translation in the operator harness (keyed by client endpoint, mappings as broadcast state). */
class ConnectionVirtualIpResolverTest {
  static final long HORIZON = 1000;
  static final long RETENTION = 2000;
  static final String VIP = "10.96.0.10:80";

  KeyedBroadcastOperatorTestHarness<String, Observation, ServiceMappingUpdate, Observation> h;

  @BeforeEach
  void setUp() throws Exception {
    // The job's operator (DataTimeBroadcastOperator), as CorrelationJob.connectionGraph makes it.
    h = new KeyedBroadcastOperatorTestHarness<>(new DataTimeBroadcastOperator<>(new ConnectionVirtualIpResolver(HORIZON, RETENTION),
        AbstractVirtualIpResolver.BROADCAST_STATES), new ConnectionVirtualIpResolver.ByClientEndpoint(), Types.STRING, 1, 1, 0);
    h.open();
    h.setProcessingTime(0);
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
  }

  static Observation client(int port, long sent) {
    return obs("host-a", port, Role.CLIENT, "10.1.0.5", port, "10.96.0.10", 80, 100, sent, 0);
  }

  static Observation backend(String ip, int clientPort) {
    return obs("host-" + ip, clientPort, Role.SERVER, ip, 8080, "10.1.0.5", clientPort, 200, 0, 0);
  }

  int keyedStateEntries() {
    return ((org.apache.flink.runtime.state.heap.HeapKeyedStateBackend<?>)
        ((org.apache.flink.streaming.api.operators.AbstractStreamOperator<?>) h.getOperator()).getKeyedStateBackend())
        .numKeyValueStateEntries();
  }

  List<Observation> out() {
    List<Observation> r = h.extractOutputValues();
    h.getOutput().clear();
    return r;
  }

  static String view(Observation o) {
    return o.hostId + " " + o.localEndpoint() + ">" + o.remoteEndpoint();
  }

  List<String> outViews() {
    return out().stream().map(ConnectionVirtualIpResolverTest::view).toList();
  }

  @Test
  void singleBackendIsTranslatedAtOnceAndPairsWithTheBackend() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080"), 0);
    h.processElement(client(40000, 10), 0);
    List<Observation> o = out();
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.7:8080"), o.stream().map(ConnectionVirtualIpResolverTest::view).toList());
    assertEquals(backend("10.2.0.7", 40000).connectionKey(), o.get(0).connectionKey(), "same correlator key");
  }

  @Test
  void multiBackendClientWaitsForTheBackendThatServedIt() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processElement(client(40000, 10), 0);
    assertEquals(List.of(), out(), "held: which backend is not known yet");
    h.processElement(backend("10.2.0.8", 40000), 0);
    assertEquals(List.of("host-10.2.0.8 10.2.0.8:8080>10.1.0.5:40000", "host-a 10.1.0.5:40000>10.2.0.8:8080"),
        outViews());
    h.processElement(client(40000, 20), 0);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.8:8080"), outViews(), "now known: at once");
    // Another client port of the same host is resolved on its own.
    h.processElement(backend("10.2.0.7", 40001), 0);
    h.processElement(client(40001, 5), 0);
    assertEquals(List.of("host-10.2.0.7 10.2.0.7:8080>10.1.0.5:40001", "host-a 10.1.0.5:40001>10.2.0.7:8080"),
        outViews());
  }

  @Test
  void unresolvedClientGoesOnUntranslatedAfterTheHorizon() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processElement(client(40000, 10), 0);
    h.setProcessingTime(HORIZON - 1);
    assertEquals(List.of(), out());
    h.setProcessingTime(HORIZON);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.96.0.10:80"), outViews());
    h.setProcessingTime(10 * RETENTION);
    assertEquals(0, keyedStateEntries(), "nothing kept for the key");
  }

  @Test
  void aSocketReleasedUntranslatedStaysUntranslatedSoItIsNotSplitOverTwoKeys() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processElement(client(40000, 10), 0);
    h.setProcessingTime(HORIZON);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.96.0.10:80"), outViews());
    h.processElement(backend("10.2.0.8", 40000), 0); // too late
    out();
    h.processElement(client(40000, 20), 0);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.96.0.10:80"), outViews());
    h.processElement(closed(client(40000, 30)), 0);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.96.0.10:80"), outViews());
  }

  @Test
  void anActiveTranslatedSocketKeepsItsBackendBeyondTheRetention() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processElement(backend("10.2.0.8", 40000), 0);
    h.processElement(client(40000, 10), 0);
    out();
    for (long t = RETENTION / 2; t <= 5 * RETENTION; t += RETENTION / 2) {
      h.setProcessingTime(t);
      h.processElement(client(40000, 10 + t), 0);
      assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.8:8080"), outViews(), "at " + t);
    }
  }

  @Test
  void stateForAClientEndpointIsForgottenAfterTheRetention() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processElement(backend("10.2.0.7", 40000), 0);
    h.processElement(client(40000, 10), 0);
    out();
    h.setProcessingTime(RETENTION);
    assertEquals(0, keyedStateEntries());
  }

  @Test
  void closeOfAClientForgetsItsBackendSoAReusedPortResolvesAgain() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processElement(backend("10.2.0.7", 40000), 0);
    h.processElement(closed(client(40000, 10)), 0);
    assertEquals("host-a 10.1.0.5:40000>10.2.0.7:8080", outViews().get(1));
    h.setProcessingTime(RETENTION); // the backend's report ages out
    h.processElement(client(40000, 1), 0);
    assertEquals(List.of(), out(), "reused port: waits for its own backend");
    h.processElement(backend("10.2.0.8", 40000), 0);
    assertEquals("host-a 10.1.0.5:40000>10.2.0.8:8080", outViews().get(1));
  }

  @Test
  void clientPortZeroIsOnlyTranslatedForASingleBackendAndTeachesNothing() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processElement(backend("10.2.0.7", 0), 0);
    assertEquals(List.of("host-10.2.0.7 10.2.0.7:8080>10.1.0.5:0"), outViews());
    h.processElement(client(0, 10), 0);
    assertEquals(List.of("host-a 10.1.0.5:0>10.96.0.10:80"), outViews(), "many sockets: untranslated at once");
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080"), 0);
    h.processElement(client(0, 10), 0);
    assertEquals(List.of("host-a 10.1.0.5:0>10.2.0.7:8080"), outViews());
  }

  @Test
  void deletedOrUnknownServicesPassThrough() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080"), 0);
    h.processBroadcastElement(ServiceMappingUpdate.deletion(VIP), 0);
    h.processElement(client(40000, 10), 0);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.96.0.10:80"), outViews());
    h.processElement(obs("host-a", 9, Role.CLIENT, "10.1.0.5", 40002, "10.3.0.1", 443, 100, 1, 1), 0);
    assertEquals(List.of("host-a 10.1.0.5:40002>10.3.0.1:443"), outViews());
    h.processElement(obs("host-b", 9, Role.UNKNOWN, "10.3.0.1", 443, "10.1.0.5", 40003, 100, 1, 1), 0);
    assertEquals(1, out().size());
  }

  @Test
  void anUpdatedMappingReplacesTheBackends() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.9:8080"), 0);
    h.processElement(client(40000, 10), 0);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.9:8080"), outViews());
  }

  @Test
  void decodesMappingsAndTombstones() throws Exception {
    ServiceMapping m = ServiceMapping.newBuilder().setVip("::ffff:10.96.0.10").setPort(80)
        .setNamespace("shop").setService("cart")
        .setBackends(List.of(ServiceBackend.newBuilder().setAddress("10.2.0.7").setPort(8080).build()))
        .build();
    ByteBuffer b = ServiceMapping.getEncoder().encode(m);
    byte[] bytes = new byte[b.remaining()];
    b.get(bytes);
    ServiceMappingUpdate u = ServiceMappingDeserializer.decode(null, bytes, WattgraphSchemas.recordDecoder(ServiceMapping.getClassSchema()));
    assertEquals("10.96.0.10:80", u.vipEndpoint);
    assertEquals(List.of("10.2.0.7:8080"), List.of(u.backends));
    assertEquals("shop/cart", u.service);
    ServiceMappingUpdate del = ServiceMappingDeserializer.decode(
        "10.96.0.10:80".getBytes(StandardCharsets.UTF_8), null, WattgraphSchemas.recordDecoder(ServiceMapping.getClassSchema()));
    assertEquals(true, del.delete);
    assertEquals("10.96.0.10:80", del.vipEndpoint);
    assertEquals("2001:db8::1:443", ServiceMappingDeserializer.parseEndpoint("[2001:db8::1]:443"));
  }

  @Test
  void mappingsTheJobCannotUseBecomeDeadLettersWithTheReason() throws Exception {
    ServiceMapping udp = ServiceMapping.newBuilder().setVip("10.96.0.53").setPort(53).setProtocol("UDP")
        .setBackends(List.of()).build();
    ServiceMapping badPort = ServiceMapping.newBuilder().setVip("10.96.0.10").setPort(80)
        .setBackends(List.of(ServiceBackend.newBuilder().setAddress("10.2.0.7").setPort(70000).build())).build();
    List<Decoded<ServiceMappingUpdate>> out = new ArrayList<>();
    ServiceMappingDeserializer d = new ServiceMappingDeserializer();
    for (byte[] value : List.of(new byte[] {1, 2, 3}, bytes(udp), bytes(badPort))) {
      d.deserialize(new org.apache.kafka.clients.consumer.ConsumerRecord<>("maps", 0, out.size(),
          "k".getBytes(StandardCharsets.UTF_8), value), new ResourceWindowsTest.ListCollector<>(out));
    }
    d.deserialize(new org.apache.kafka.clients.consumer.ConsumerRecord<>("maps", 0, 3, null, null),
        new ResourceWindowsTest.ListCollector<>(out));
    assertEquals(4, out.size());
    for (Decoded<ServiceMappingUpdate> m : out) {
      assertEquals(null, m.value);
      assertEquals("maps", m.deadLetter.topic);
    }
    assertTrue(out.get(0).deadLetter.reason.startsWith("undecodable: "), out.get(0).deadLetter.reason);
    assertEquals("invalid: protocol UDP is not correlated", out.get(1).deadLetter.reason);
    assertEquals("invalid: port 70000 out of range", out.get(2).deadLetter.reason);
    assertEquals("invalid: tombstone without key", out.get(3).deadLetter.reason);
    assertEquals(3, out.get(3).deadLetter.offset);
  }

  static byte[] bytes(ServiceMapping m) throws Exception {
    ByteBuffer b = ServiceMapping.getEncoder().encode(m);
    byte[] bytes = new byte[b.remaining()];
    b.get(bytes);
    return bytes;
  }
}
