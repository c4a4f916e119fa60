package io.wattgraph.stream.vip;

import static io.wattgraph.stream.transaction.TransactionJoinsTest.records;
import static io.wattgraph.stream.transaction.TransactionJoinsTest.tx;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.wattgraph.stream.ServiceMappingUpdate;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.source.Endpoints;
import io.wattgraph.stream.transaction.EdgeInput;
import io.wattgraph.stream.transaction.TransactionEdges;
import io.wattgraph.stream.transaction.TransactionJoinsTest;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedBroadcastOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * VIP translation of TransactionStats records in the operator harness (keyed by client endpoint,
 * mappings as broadcast state, event time by hand, window 10 s): a client record towards a
 * multi-backend VIP waits for its backend until the watermark reaches its window's last ms (9999
 * for a record at 1000) and goes on from there, stamped with that ms.
 */
class TransactionVirtualIpResolverTest {
  static final long WINDOW = 10_000;
  static final long RETENTION = 15_000;
  static final String VIP = "10.96.0.10:80";
  static final String CLIENT_PROCESS = "host-a/100/5000";

  KeyedBroadcastOperatorTestHarness<String, Transaction, ServiceMappingUpdate, Transaction> h;

  @BeforeEach
  void setUp() throws Exception {
    // The job's operator (DataTimeBroadcastOperator): its event time is the transactions' alone.
    h = new KeyedBroadcastOperatorTestHarness<>(new DataTimeBroadcastOperator<>(
        new TransactionVirtualIpResolver(RETENTION, WINDOW), AbstractVirtualIpResolver.BROADCAST_STATES),
        new TransactionVirtualIpResolver.ByClientEndpoint(), Types.STRING, 1, 1, 0);
    h.open();
    h.setProcessingTime(0);
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
  }

  /** The client 10.1.0.5:port (host-a, P 100) towards the VIP; port 0: merged short connections. */
  static Transaction client(int port, long ms) {
    return tx("CLIENT", "host-a", "10.1.0.5", port, "10.96.0.10", 80, 100, 5000, ms);
  }

  /** The backend ip:8080 (its own host, P 200) serving the client 10.1.0.5:clientPort. */
  static Transaction backend(String ip, int clientPort, long ms) {
    return tx("SERVER", "host-" + ip, ip, 8080, "10.1.0.5", clientPort, 200, 6000, ms);
  }

  void in(Transaction t) throws Exception {
    h.processElement(t, t.eventTimeMs());
  }

  List<StreamRecord<Transaction>> out() {
    List<StreamRecord<Transaction>> r = records(h.getOutput());
    h.getOutput().clear();
    return r;
  }

  /** "host local>remote @timestamp" of each output record. */
  List<String> outViews() {
    return out().stream().map(r -> view(r.getValue()) + " @" + r.getTimestamp()).toList();
  }

  static String view(Transaction t) {
    return t.hostId + " " + Endpoints.of(t.localIp, t.localPort) + ">" + Endpoints.of(t.remoteIp, t.remotePort);
  }

  int keyedStateEntries() {
    return ((org.apache.flink.runtime.state.heap.HeapKeyedStateBackend<?>)
        ((org.apache.flink.streaming.api.operators.AbstractStreamOperator<?>) h.getOperator()).getKeyedStateBackend())
        .numKeyValueStateEntries();
  }

  @Test
  void singleBackendIsRewrittenAtOnceAndPairsWithTheBackendsRecord() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080"), 0);
    in(client(40000, 1000));
    List<StreamRecord<Transaction>> o = out();
    assertEquals(1, o.size());
    assertEquals("host-a 10.1.0.5:40000>10.2.0.7:8080", view(o.get(0).getValue()));
    assertEquals(1000, o.get(0).getTimestamp(), "its own time: not held");
    assertEquals(backend("10.2.0.7", 40000, 1000).connectionKey(), o.get(0).getValue().connectionKey(),
        "the key of the backend's record in TransactionEdges");
  }

  @Test
  void multiBackendResolvedByTheServerRecordArrivingFirst() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    in(backend("10.2.0.8", 40000, 1000));
    assertEquals(List.of("host-10.2.0.8 10.2.0.8:8080>10.1.0.5:40000 @1000"), outViews(), "unchanged, at once");
    in(client(40000, 2000));
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.8:8080 @2000"), outViews(), "known: at once");
  }

  @Test
  void multiBackendClientHeldUntilItsWindowEndsResolvedByTheServerRecordArrivingAfter() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    in(client(40000, 1000));
    h.processWatermark(5000);
    assertEquals(List.of(), outViews(), "held: which backend is not known yet");
    // The backend's record of the same window, after the watermark passed the client's record.
    in(backend("10.2.0.8", 40000, 3000));
    assertEquals(List.of("host-10.2.0.8 10.2.0.8:8080>10.1.0.5:40000 @3000"), outViews(),
        "the client's record stays in its window: not released with the backend's timestamp");
    h.processWatermark(9998);
    assertEquals(List.of(), outViews());
    h.processWatermark(9999);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.8:8080 @9999"), outViews());
    // Its next window: known, at once.
    in(client(40000, 12_000));
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.8:8080 @12000"), outViews());
  }

  @Test
  void heldRecordsOfTwoWindowsGoEachAtItsOwnWindowsEnd() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    in(client(40000, 1000));
    in(client(40000, 11_000));
    in(backend("10.2.0.7", 40000, 11_000));
    out();
    h.processWatermark(9999);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.7:8080 @9999"), outViews());
    h.processWatermark(19_999);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.7:8080 @19999"), outViews());
  }

  @Test
  void unresolvedPastTheHorizonGoesOnUntranslatedAndALaterWindowIsResolvedAgain() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    in(client(40000, 1000));
    h.processWatermark(9999);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.96.0.10:80 @9999"), outViews(), "the External VIP:port edge");
    // Records are per interval, each counted once: the socket is not kept untranslated.
    in(backend("10.2.0.7", 40000, 11_000));
    out();
    in(client(40000, 11_500));
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.7:8080 @11500"), outViews());
    // A record whose window is complete goes on at once (untranslated without a backend).
    h.processWatermark(30_000);
    in(client(40001, 25_000));
    assertEquals(List.of("host-a 10.1.0.5:40001>10.96.0.10:80 @25000"), outViews(), "late: not held");
    // Nothing is kept after the retention.
    h.setProcessingTime(10 * RETENTION);
    assertEquals(0, keyedStateEntries());
  }

  @Test
  void aHeldRecordOutlastsTheRetentionWhileTheWatermarkStalls() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    in(client(40000, 1000));
    in(backend("10.2.0.8", 40000, 1000));
    out();
    h.setProcessingTime(5 * RETENTION);
    assertEquals(List.of(), outViews());
    h.processWatermark(9999);
    assertEquals(List.of("host-a 10.1.0.5:40000>10.2.0.8:8080 @9999"), outViews(), "still resolved, not lost");
    h.setProcessingTime(10 * RETENTION);
    assertEquals(0, keyedStateEntries());
  }

  @Test
  void maskedClientPortZeroIsOnlyResolvedForASingleBackend() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    Transaction masked = client(0, 1000);
    masked.closed = true;
    in(masked);
    assertEquals(List.of("host-a 10.1.0.5:0>10.96.0.10:80 @1000"), outViews(), "many sockets: untranslated, at once");
    // The backend's merged record (client port 0) passes and teaches nothing.
    in(backend("10.2.0.7", 0, 1000));
    assertEquals(List.of("host-10.2.0.7 10.2.0.7:8080>10.1.0.5:0 @1000"), outViews());
    in(client(0, 2000));
    assertEquals(List.of("host-a 10.1.0.5:0>10.96.0.10:80 @2000"), outViews());
    h.processWatermark(9999);
    assertEquals(List.of(), outViews(), "nothing was held");

    // A single backend: rewritten, and it pairs with the backend's merged record.
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080"), 0);
    in(client(0, 12_000));
    List<StreamRecord<Transaction>> o = out();
    assertEquals("host-a 10.1.0.5:0>10.2.0.7:8080", view(o.get(0).getValue()));
    assertEquals(backend("10.2.0.7", 0, 12_000).connectionKey(), o.get(0).getValue().connectionKey());
  }

  @Test
  void throughTransactionEdgesBothEndsMakeTheEdgeClientToBackend() throws Exception {
    h.processBroadcastElement(ServiceMappingUpdate.of(VIP, "10.2.0.7:8080", "10.2.0.8:8080"), 0);
    var edges = new KeyedOneInputStreamOperatorTestHarness<String, Transaction, EdgeInput>(
        new KeyedProcessOperator<>(new TransactionEdges(3_600_000, WINDOW, 30_000)), new TransactionEdges.ByConnection(),
        Types.STRING);
    edges.open();
    in(client(40000, 1000));
    in(backend("10.2.0.8", 40000, 2000));
    h.processWatermark(9999);
    for (StreamRecord<Transaction> r : out()) {
      edges.processElement(r);
    }
    edges.processWatermark(new Watermark(9999));
    List<String> keys = TransactionJoinsTest.<EdgeInput>records(edges.getOutput()).stream()
        .map(r -> r.getValue().key()).toList();
    assertEquals(List.of("P:" + CLIENT_PROCESS + ">P:host-10.2.0.8/200/6000",
        "P:" + CLIENT_PROCESS + ">P:host-10.2.0.8/200/6000"), keys, "one edge, both ends' records");
    edges.close();
  }
}
