package io.wattgraph.stream.window;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.WindowMetrics;
import io.wattgraph.stream.CorrelationJob;
import io.wattgraph.stream.JobConfig;
import io.wattgraph.stream.MetricsAccumulator;
import io.wattgraph.stream.NamespaceAccumulator;
import io.wattgraph.stream.PodMetadata;
import io.wattgraph.stream.Sources;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.sink.kafka.NamespaceMetricsSerializer;
import io.wattgraph.stream.sink.kafka.WindowMetricsSerializer;
import io.wattgraph.stream.source.Decoded;
import io.wattgraph.stream.source.Sample;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkGeneratorSupplier;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.clock.ManualClock;
import org.apache.flink.util.clock.RelativeClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The production window operator ({@link CorrelationJob#entityWindows}) in Flink's operator harness:
 * watermarks are given by hand, so disorder and lateness are exact. Window 10 s, lateness 5 s.
 *
 * <p>Long on purpose: every case drives the same production operator through one harness setup,
 * with inputs and expected rows written out by hand.
 */
public class ResourceWindowsTest {
  /** A window boundary (Unix ms, multiple of 10 s). */
  static final long T0 = 1_700_000_000_000L;
  static final long S = 1_000_000_000L;
  static final String P = "host-a/42/900";

  KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> h;
  /** The production namespace window operator ({@link CorrelationJob#namespaceWindows}). */
  KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> hn;

  @BeforeEach
  void setUp() throws Exception {
    JobConfig c = WindowHarness.config(5_000);
    h = WindowHarness.open(CorrelationJob::entityWindows, MetricInput.class, new EntityWindowAggregate.ByWindowKey(), c);
    hn = WindowHarness.open(CorrelationJob::namespaceWindows, MetricInput.class,
        new NamespaceWindowAggregate.ByNamespace(), c);
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
    hn.close();
  }

  /** A sample of scope at T0 + endS seconds, interval 1 s (or as given). */
  static Sample sample(String scope, String host, double endS, double lengthS, long cpuNs, double energyJ,
      boolean measured, int threads, int processes) {
    Sample s = new Sample();
    s.scope = scope;
    s.hostId = host;
    s.intervalEndNs = T0 * 1_000_000L + Math.round(endS * S);
    s.intervalStartNs = s.intervalEndNs - Math.round(lengthS * S);
    s.tgid = scope.equals("PROCESS") ? 42 : 0;
    s.processStartTimeNs = scope.equals("PROCESS") ? 900 : 0;
    s.comm = scope.equals("PROCESS") ? "java" : "";
    s.groupId = "host";
    s.threads = threads;
    s.processes = processes;
    s.cpuTimeNs = cpuNs;
    s.measured = measured;
    s.energyJoules = energyJ;
    return s;
  }

  static Sample process(double endS, long cpuNs, double energyJ, int threads) {
    return sample("PROCESS", "host-a", endS, 1, cpuNs, energyJ, true, threads, 1);
  }

  /**
   * Feeds a sample like the pipeline does: split into its window inputs, event time = its interval
   * end; NAMESPACE inputs to the namespace windows (CorrelationJob.IsNamespace), the rest to h.
   */
  void feed(Sample s) throws Exception {
    List<MetricInput> inputs = new ArrayList<>();
    Decoded<Sample> d = Decoded.ok(s);
    new SplitResourceSamples().processElement(d, null, new ListCollector<>(inputs));
    for (MetricInput in : inputs) {
      (in.isNamespace() ? hn : h).processElement(new StreamRecord<>(in, d.eventTimeMs(Sample::eventTimeMs)));
    }
  }

  void watermarkAtSecond(double s) throws Exception {
    h.processWatermark(T0 + Math.round(s * 1000));
    hn.processWatermark(T0 + Math.round(s * 1000));
  }

  List<MetricsRow> namespaceRows() {
    List<MetricsRow> out = new ArrayList<>();
    for (Object o : hn.extractOutputValues()) {
      out.add((MetricsRow) o);
    }
    return out;
  }

  List<MetricsRow> rows() {
    List<MetricsRow> out = new ArrayList<>();
    for (Object o : h.extractOutputValues()) {
      out.add((MetricsRow) o);
    }
    return out;
  }

  int late() {
    return h.getSideOutput(CorrelationJob.LATE) == null ? 0 : h.getSideOutput(CorrelationJob.LATE).size();
  }

  @Test
  void outOfOrderSamplesLateUpdatesAndBeyondLateness() throws Exception {
    // Out of order within the window; the interval ending exactly at T0+10 s belongs to [T0, T0+10 s).
    feed(process(3, 400_000_000L, 2.0, 2));
    feed(process(1, 200_000_000L, 1.0, 3));
    feed(process(10, 900_000_000L, 4.0, 1));
    feed(process(10.5, 500_000_000L, 8.0, 1)); // next window
    watermarkAtSecond(9.998);
    assertEquals(0, rows().size(), "not before the watermark passes the window end");

    watermarkAtSecond(9.999);
    List<MetricsRow> rows = rows();
    assertEquals(1, rows.size(), rows::toString);
    MetricsRow r = rows.get(0);
    assertEquals("PROCESS", r.level);
    assertEquals(P, r.entityId);
    assertEquals("host", r.groupId);
    assertEquals("java", r.comm);
    assertEquals(T0 * 1_000_000L, r.windowStartNs);
    assertEquals((T0 + 10_000) * 1_000_000L, r.windowEndNs);
    assertEquals(0, r.revision);
    assertEquals(3, r.samples);
    assertEquals(3, r.intervals);
    assertEquals(1.5, r.cpuSeconds, 1e-12);
    assertEquals(0.15, r.cpuCores, 1e-12);
    assertEquals(7.0, r.energyJoules, 1e-12);
    assertEquals(0.7, r.powerWatts, 1e-12);
    assertEquals("MEASURED", r.powerSource);
    assertEquals(3, r.threads, "highest per-interval count");
    assertEquals(1, r.processes);
    assertNull(r.hostCores);
    assertNull(r.hostCpuShare);
    assertNull(r.idlePowerWatts);

    // Late, within the lateness (watermark 12 s < window end 10 s + 5 s): the result is updated.
    watermarkAtSecond(12);
    feed(process(6, 100_000_000L, 3.0, 5));
    rows = rows();
    assertEquals(2, rows.size(), rows::toString);
    MetricsRow u = rows.get(1);
    assertEquals(1, u.revision);
    assertEquals(T0 * 1_000_000L, u.windowStartNs);
    assertEquals(4, u.samples);
    assertEquals(1.6, u.cpuSeconds, 1e-12);
    assertEquals(0.16, u.cpuCores, 1e-12);
    assertEquals(10.0, u.energyJoules, 1e-12);
    assertEquals(1.0, u.powerWatts, 1e-12);
    assertEquals(5, u.threads);
    assertEquals(0, late());

    // Beyond the lateness: counted on the side output, the result stays.
    watermarkAtSecond(15);
    feed(process(7, 100_000_000L, 3.0, 1));
    assertEquals(1, late());
    assertEquals(2, rows().size(), "no update beyond the lateness");
    watermarkAtSecond(20);
    rows = rows();
    assertEquals(3, rows.size(), "the next window, nothing else: " + rows);
    assertEquals((T0 + 10_000) * 1_000_000L, rows.get(2).windowStartNs);
    assertEquals(0, rows.get(2).revision);
    assertEquals(0.8, rows.get(2).powerWatts, 1e-12);
  }

  @Test
  void groupsPodsAndHostsWithMixedSources() throws Exception {
    String c1 = "a".repeat(64);
    String c2 = "b".repeat(64);
    for (double t : new double[] {5, 10}) {
      Sample g1 = sample("GROUP", "host-a", t, 5, 2 * S, 10.0, true, 3, 2);
      g1.groupId = c1;
      g1.podUid = "pod-1";
      Sample g2 = sample("GROUP", "host-a", t, 5, S, 5.0, t == 10, 4, 1);
      g2.groupId = c2;
      g2.podUid = "pod-1";
      Sample host = sample("HOST", "host-a", t, 5, 4 * S, 40.0, true, 9, 4);
      host.idlePowerWatts = 2.0;
      feed(g1);
      feed(g2);
      feed(host);
    }
    watermarkAtSecond(10);
    List<MetricsRow> rows = rows();
    assertEquals(4, rows.size(), rows::toString);
    MetricsRow g1 = find(rows, "GROUP", c1);
    assertEquals(0.4, g1.cpuCores, 1e-12);
    assertEquals(2.0, g1.powerWatts, 1e-12);
    assertEquals("MEASURED", g1.powerSource);
    assertEquals("pod-1", g1.podUid);
    MetricsRow g2 = find(rows, "GROUP", c2);
    assertEquals("MIXED", g2.powerSource, "one ESTIMATED and one MEASURED interval");
    MetricsRow pod = find(rows, "POD", "pod-1");
    assertEquals(0.6, pod.cpuCores, 1e-12);
    assertEquals(3.0, pod.powerWatts, 1e-12);
    assertEquals(30.0, pod.energyJoules, 1e-12);
    assertEquals("MIXED", pod.powerSource);
    assertEquals(7, pod.threads, "3 + 4 per interval");
    assertEquals(3, pod.processes);
    assertEquals(4, pod.samples);
    assertEquals(2, pod.intervals);
    MetricsRow host = find(rows, "HOST", "host-a");
    assertEquals(0.8, host.cpuCores, 1e-12);
    assertEquals(8.0, host.powerWatts, 1e-12);
    assertEquals(2.0, host.idlePowerWatts, 1e-12, "2 W over the whole window");
    assertEquals(9, host.threads);
  }

  @Test
  void hostsAreWindowedIndependently() throws Exception {
    // Two hosts in one operator: each key's window only has its own host's samples.
    feed(process(2, S, 1.0, 1));
    Sample other = sample("PROCESS", "host-b", 2, 1, 3 * S / 10, 2.0, false, 1, 1);
    feed(other);
    watermarkAtSecond(10);
    List<MetricsRow> rows = rows();
    assertEquals(2, rows.size());
    assertEquals(0.1, find(rows, "PROCESS", P).cpuCores, 1e-12);
    MetricsRow b = find(rows, "PROCESS", "host-b/42/900");
    assertEquals(0.03, b.cpuCores, 1e-12);
    assertEquals("ESTIMATED", b.powerSource);
  }

  /** s in container group of pod-1, with the pod's metadata when name is given (else the UID only). */
  static Sample inPod(Sample s, String group, String name) {
    s.groupId = group;
    s.podUid = "pod-1";
    s.pod = name == null ? null : PodMetadata.of(name, "shop", Map.of("tier", "web", "app", "checkout"));
    return s;
  }

  @Test
  void podMetadataOfTheLatestNamedSampleOnProcessGroupAndPod() throws Exception {
    String c1 = "c1".repeat(32);
    String c2 = "c2".repeat(32);
    // pod-1: the UID only at first (the agent's pod source was slow), the name from 4 s on; the
    // named sample arrives after a later one without metadata, which must not erase it.
    for (double t : new double[] {2, 7, 4}) {
      String name = t == 4 ? "checkout-1" : null;
      feed(inPod(process(t, S / 10, 1.0, 1), c1, name));
      feed(inPod(sample("GROUP", "host-a", t, 1, S / 10, 1.0, true, 1, 1), c1, name));
    }
    // A v2 agent's container in pod-2: UID, no metadata.
    Sample v2 = sample("GROUP", "host-a", 3, 1, S / 10, 1.0, true, 1, 1);
    v2.groupId = c2;
    v2.podUid = "pod-2";
    feed(v2);
    feed(sample("HOST", "host-a", 3, 1, S, 2.0, true, 2, 2));
    watermarkAtSecond(10);
    List<MetricsRow> rows = rows();
    assertEquals(6, rows.size(), rows::toString);
    for (MetricsRow r : List.of(find(rows, "PROCESS", P), find(rows, "GROUP", c1), find(rows, "POD", "pod-1"))) {
      assertEquals("checkout-1", r.pod.name, r::toString);
      assertEquals("shop", r.pod.namespace, r::toString);
      assertArrayEquals(new String[] {"app=checkout", "tier=web"}, r.pod.labels, "key order");
    }
    WindowMetrics pod = WindowMetricsSerializer.toAvro(find(rows, "POD", "pod-1"));
    assertEquals("checkout-1", pod.getPodName());
    assertEquals("shop", pod.getPodNamespace());
    assertEquals(Map.of("app", "checkout", "tier", "web"), pod.getPodLabels());
    for (MetricsRow r : List.of(find(rows, "GROUP", c2), find(rows, "POD", "pod-2"), find(rows, "HOST", "host-a"))) {
      assertNull(r.pod, r::toString);
      WindowMetrics w = WindowMetricsSerializer.toAvro(r);
      assertNull(w.getPodName());
      assertNull(w.getPodNamespace());
      assertEquals(Map.of(), w.getPodLabels());
    }
    assertEquals("pod-2", find(rows, "GROUP", c2).podUid);
  }

  /** A container's GROUP record on host: pod podUid (none when null) in namespace ns (none when null). */
  static Sample container(String host, String group, String podUid, String ns, double endS, long cpuNs,
      double energyJ, boolean measured) {
    Sample s = sample("GROUP", host, endS, 1, cpuNs, energyJ, measured, 2, 1);
    s.groupId = group;
    s.podUid = podUid;
    s.pod = ns == null ? null : PodMetadata.of(podUid + "-name", ns, Map.of("app", "x"));
    s.hostCores = 8;
    return s;
  }

  /**
   * Two hosts, two namespaces, groups without a namespace (the host group, a container outside
   * Kubernetes, a pod whose agent has no pod metadata), then a late sample within the lateness that
   * revises the namespace's window and one beyond it.
   */
  @Test
  void namespacesSumTheirContainersOverHostsAndLateSamplesReviseThem() throws Exception {
    feed(container("host-a", "a1", "pod-1", "shop", 2, 2 * S, 10.0, true));
    feed(container("host-a", "a1", "pod-1", "shop", 5, S, 4.0, true));
    feed(container("host-b", "b2", "pod-2", "shop", 3, S / 2, 3.0, false));
    feed(container("host-a", "a3", "pod-3", "web", 4, S, 2.0, true));
    feed(container("host-b", "b4", "pod-4", null, 4, 7 * S, 70.0, true)); // pod without metadata
    feed(container("host-b", "b5", null, null, 4, 6 * S, 60.0, true)); // container outside Kubernetes
    feed(sample("GROUP", "host-a", 4, 1, 9 * S, 90.0, true, 5, 3)); // the host group
    watermarkAtSecond(10);

    List<MetricsRow> ns = namespaceRows();
    assertEquals(2, ns.size(), ns::toString);
    MetricsRow shop = find(ns, "NAMESPACE", "shop");
    assertEquals("*", shop.hostId);
    assertEquals("NAMESPACE|*|shop", shop.key());
    assertEquals(0, shop.revision);
    assertEquals(T0 * 1_000_000L, shop.windowStartNs);
    assertEquals(3, shop.samples);
    assertEquals(3.5, shop.cpuSeconds, 1e-12, "2 + 1 (pod-1 on host-a) + 0.5 (pod-2 on host-b)");
    assertEquals(0.35, shop.cpuCores, 1e-12);
    assertEquals(17.0, shop.energyJoules, 1e-12);
    assertEquals(1.7, shop.powerWatts, 1e-12);
    assertEquals("MIXED", shop.powerSource, "host-b estimates");
    assertEquals(2, shop.hosts);
    assertEquals(2, shop.pods);
    assertEquals(2, shop.containers);
    assertNull(shop.hostCores, "no capacity across hosts");
    assertNull(shop.hostCpuShare);
    assertNull(shop.utilization);
    assertNull(shop.tx, "no TransactionStats");
    MetricsRow web = find(ns, "NAMESPACE", "web");
    assertEquals(1.0, web.cpuSeconds, 1e-12);
    assertEquals(2.0, web.energyJoules, 1e-12);
    assertEquals("MEASURED", web.powerSource);
    assertEquals(1, web.hosts);
    assertEquals(1, web.pods);
    assertEquals(1, web.containers);
    // The entity windows are as before: 6 GROUP (a1, b2, a3, b4, b5, host) and 4 POD rows.
    List<MetricsRow> entities = rows();
    assertEquals(10, entities.size(), entities::toString);
    assertEquals(7.0, find(entities, "POD", "pod-4").cpuSeconds, 1e-12);
    assertEquals(8, find(entities, "POD", "pod-1").hostCores, "the pod keeps its host's cores");

    io.wattgraph.schema.NamespaceMetrics avro = NamespaceMetricsSerializer.toAvro(shop);
    assertEquals("shop", avro.getNamespace());
    assertEquals(17.0, avro.getEnergyJoules());
    assertEquals(io.wattgraph.schema.NamespacePowerSource.MIXED, avro.getPowerSource());
    assertEquals(2, avro.getPods());
    assertNull(avro.getServerTransactions());
    assertEquals(List.of(), avro.getServerTimeBuckets());

    // Late but within the lateness: a third host's pod of shop; the window fires again, revision 1.
    hn.getOutput().clear();
    feed(container("host-c", "c6", "pod-6", "shop", 6, S, 1.0, true));
    List<MetricsRow> revised = namespaceRows();
    assertEquals(1, revised.size(), revised::toString);
    MetricsRow shop1 = revised.get(0);
    assertEquals("shop", shop1.entityId);
    assertEquals(1, shop1.revision);
    assertEquals(4, shop1.samples);
    assertEquals(4.5, shop1.cpuSeconds, 1e-12);
    assertEquals(18.0, shop1.energyJoules, 1e-12);
    assertEquals(3, shop1.hosts);
    assertEquals(3, shop1.pods);
    assertEquals(3, shop1.containers);
    assertEquals(0, hn.getSideOutput(CorrelationJob.LATE) == null ? 0 : hn.getSideOutput(CorrelationJob.LATE).size());

    // Beyond the lateness (window end 10 s + 5 s): to the late side output, no new result.
    hn.getOutput().clear();
    watermarkAtSecond(16);
    feed(container("host-b", "b2", "pod-2", "shop", 7, S, 1.0, false));
    assertEquals(List.of(), namespaceRows());
    assertEquals(1, hn.getSideOutput(CorrelationJob.LATE).size());
  }

  /**
   * An agent's replayed duplicates (same record id) count once at every level, also when they come
   * after the window fired (within the lateness: no new revision, the result would be the same);
   * a new late sample still revises the window.
   */
  @Test
  void duplicateSamplesCountOnceAndALateDuplicateEmitsNothing() throws Exception {
    Sample p1 = process(3, 400_000_000L, 2.0, 2);
    Sample p2 = process(7, 600_000_000L, 3.0, 4);
    Sample g = container("host-a", "c1", "pod-1", "shop", 3, S, 5.0, true);
    Sample host = sample("HOST", "host-a", 3, 1, 2 * S, 20.0, true, 9, 5);
    long id = 1000;
    for (Sample x : List.of(p1, p2, g, host)) {
      x.recordId = ++id;
    }
    for (Sample x : List.of(p1, g, p2, host, p1, g, host, p2)) {
      feed(x);
    }
    watermarkAtSecond(10);
    List<MetricsRow> first = rows();
    assertEquals(List.of(0, 0, 0, 0), first.stream().map(r -> r.revision).toList(), first::toString);
    MetricsRow proc = find(first, "PROCESS", P);
    assertEquals(2, proc.samples);
    assertEquals(1.0, proc.cpuSeconds, 1e-12);
    assertEquals(5.0, proc.energyJoules, 1e-12);
    assertEquals(1.0, find(first, "GROUP", "c1").cpuSeconds, 1e-12);
    assertEquals(1, find(first, "POD", "pod-1").samples);
    assertEquals(2.0, find(first, "HOST", "host-a").cpuSeconds, 1e-12);
    assertEquals(1, namespaceRows().size());
    assertEquals(1, find(namespaceRows(), "NAMESPACE", "shop").samples);

    h.getOutput().clear();
    hn.getOutput().clear();
    feed(p2);
    feed(g);
    assertEquals(List.of(), rows(), "a late duplicate changes nothing, so emits nothing");
    assertEquals(List.of(), namespaceRows());
    assertEquals(0, late());

    Sample p3 = process(8, 100_000_000L, 1.0, 4);
    p3.recordId = ++id;
    feed(p3);
    List<MetricsRow> revised = rows();
    assertEquals(1, revised.size(), revised::toString);
    assertEquals(1, revised.get(0).revision);
    assertEquals(3, revised.get(0).samples);
    assertEquals(1.1, revised.get(0).cpuSeconds, 1e-12);
  }

  /**
   * The transactions of two hosts' pods of one namespace: counts and bytes summed, the latency
   * histograms merged exactly (the entity windows' code), percentiles read off the merged buckets.
   */
  @Test
  void namespaceTransactionsMergeTheHistogramsOfAllHosts() throws Exception {
    Transaction a = TransactionMathTest.tx("SERVER", 60, new int[] {100}, new long[] {60});
    a.hostId = "host-a";
    Transaction b = TransactionMathTest.tx("SERVER", 40, new int[] {100, TransactionMathTest.B1000},
        new long[] {10, 30});
    b.hostId = "host-b";
    Transaction c = TransactionMathTest.tx("CLIENT", 7, new int[] {TransactionMathTest.B1MS}, new long[] {7});
    c.hostId = "host-b";
    long ts = T0 + 3_000;
    hn.processElement(new StreamRecord<>(MetricInput.ofTransaction(a, MetricInput.NAMESPACE, "shop", "a1", "pod-1"), ts));
    hn.processElement(new StreamRecord<>(MetricInput.ofTransaction(b, MetricInput.NAMESPACE, "shop", "b2", "pod-2"), ts));
    hn.processElement(new StreamRecord<>(MetricInput.ofTransaction(c, MetricInput.NAMESPACE, "shop", "b2", "pod-2"), ts));
    feed(container("host-a", "a1", "pod-1", "shop", 5, 2 * S, 4.0, true));
    watermarkAtSecond(10);
    MetricsRow r = find(namespaceRows(), "NAMESPACE", "shop");
    assertEquals(1, r.samples, "transactions are not samples");
    assertEquals(0.2, r.cpuCores, 1e-12);
    assertEquals(100, r.tx.serverTransactions);
    assertEquals(7, r.tx.clientTransactions);
    assertEquals(100 * 100, r.tx.serverRequestBytes, "100 bytes per transaction by tx()");
    assertEquals(1000 * 7, r.tx.clientResponseBytes);
    assertArrayEquals(new int[] {100, TransactionMathTest.B1000}, r.tx.serverTime.buckets);
    assertArrayEquals(new long[] {70, 30}, r.tx.serverTime.counts);
    // Server times 70 x 100 ns, 30 x 1000 ns: p50 rank 50 -> 100; p75 rank 75 -> 1001 (bucket midpoint).
    assertEquals(100L, r.serverTime.p50Ns);
    assertEquals(1001L, r.serverTime.p75Ns);
    assertEquals(1001L, r.serverTime.p90Ns);
    assertEquals(1001L, r.serverTime.p99Ns);
    assertEquals((70 * 100 + 30 * 1001) / 100.0, r.serverTime.meanNs, 1e-9);
    assertEquals(1_001_471L, r.clientRtt.p50Ns);
    assertNull(r.utilization, "no PowerThesis Eq. 3.3 across hosts");
    assertNull(r.serviceDemandSeconds);
    assertNull(r.saturationRate);
    assertEquals(2, r.hosts);
    assertEquals(2, r.pods);
    assertEquals(2, r.containers);
    io.wattgraph.schema.NamespaceMetrics avro = NamespaceMetricsSerializer.toAvro(r);
    assertEquals(10.0, avro.getServerRequestRate(), 1e-12);
    assertEquals(0.7, avro.getClientRequestRate(), 1e-12);
    assertEquals(List.of(100, TransactionMathTest.B1000), avro.getServerTimeBuckets());
    assertEquals(List.of(70L, 30L), avro.getServerTimeCounts());
    assertEquals(List.of(TransactionMathTest.B1MS), avro.getClientRttBuckets());
    assertEquals(1001L, avro.getServerTimeP99Ns());
  }

  /** Merged namespace accumulators: sums added, hosts, pods and containers counted once. */
  @Test
  void namespaceAccumulatorsMergeDistinctCounts() {
    NamespaceAccumulator a = new NamespaceAccumulator();
    a.add(MetricInput.of(container("host-a", "a1", "pod-1", "shop", 2, S, 1.0, true), MetricInput.NAMESPACE, "shop"));
    a.add(MetricInput.of(container("host-b", "b2", "pod-2", "shop", 3, S, 2.0, true), MetricInput.NAMESPACE, "shop"));
    NamespaceAccumulator b = new NamespaceAccumulator();
    b.add(MetricInput.of(container("host-b", "b2", "pod-2", "shop", 4, S, 4.0, false), MetricInput.NAMESPACE, "shop"));
    b.add(MetricInput.of(container("host-c", "c3", null, "shop", 4, S, 8.0, true), MetricInput.NAMESPACE, "shop"));
    a.merge(b);
    assertArrayEquals(new String[] {"host-a", "host-b", "host-c"}, a.hosts);
    assertArrayEquals(new String[] {"pod-1", "pod-2"}, a.pods, "a record without a pod UID counts no pod");
    assertArrayEquals(new String[] {"a1", "b2", "c3"}, a.containers);
    MetricsRow r = NamespaceWindowFunction.row(a, new org.apache.flink.streaming.api.windowing.windows.TimeWindow(0,
        10_000), 0);
    assertEquals(4, r.samples);
    assertEquals(4.0, r.cpuSeconds, 1e-12);
    assertEquals(15.0, r.energyJoules, 1e-12);
    assertEquals("MIXED", r.powerSource);
    assertEquals("shop", r.entityId);
  }

  /** Merged accumulators (merging windows) keep the metadata of the later named sample too. */
  @Test
  void mergeKeepsTheLaterNamedPodMetadata() {
    MetricsAccumulator later = new MetricsAccumulator();
    later.add(MetricInput.of(inPod(process(5, 1, 1, 1), "g", "new"), MetricInput.PROCESS, P));
    MetricsAccumulator earlier = new MetricsAccumulator();
    earlier.add(MetricInput.of(inPod(process(3, 1, 1, 1), "g", "old"), MetricInput.PROCESS, P));
    earlier.add(MetricInput.of(inPod(process(8, 1, 1, 1), "g", null), MetricInput.PROCESS, P));
    later.merge(earlier);
    assertEquals("new", later.pod.name);
    earlier.merge(later);
    assertEquals("new", earlier.pod.name);
  }

  static MetricsRow find(List<MetricsRow> rows, String level, String id) {
    return rows.stream().filter(r -> r.level.equals(level) && r.entityId.equals(id)).findFirst()
        .orElseThrow(() -> new AssertionError(level + " " + id + " not in " + rows));
  }

  /**
   * The production watermark strategy: bounded out-of-orderness, and a split that stops receiving
   * records (an idle host's partition) is marked idle after the idleness timeout, so it does not
   * hold back the others; it becomes active again with its next record.
   */
  @Test
  void watermarksToleratesDisorderAndMarkIdlePartitions() {
    JobConfig c = new JobConfig();
    c.maxOutOfOrdernessMs = 5_000;
    c.idlenessMs = 15_000;
    ManualClock clock = new ManualClock(1_000_000_000L);
    WatermarkGenerator<Decoded<Sample>> g = Sources.sampleWatermarks(c).createWatermarkGenerator(
        new WatermarkGeneratorSupplier.Context() {
          @Override
          public MetricGroup getMetricGroup() {
            return new UnregisteredMetricsGroup();
          }

          @Override
          public RelativeClock getInputActivityClock() {
            return clock;
          }
        });
    var ts = Sources.sampleWatermarks(c).createTimestampAssigner(null);
    Output out = new Output();
    Decoded<Sample> late = Decoded.ok(process(20, 1, 1, 1));
    Decoded<Sample> early = Decoded.ok(process(12, 1, 1, 1));
    for (Decoded<Sample> d : List.of(late, early)) {
      g.onEvent(d, ts.extractTimestamp(d, Long.MIN_VALUE), out);
    }
    assertEquals(T0 + 19_999, ts.extractTimestamp(late, Long.MIN_VALUE));
    g.onPeriodicEmit(out);
    assertEquals(T0 + 19_999 - 5_000 - 1, out.last, "highest event time minus the bound");
    assertTrue(!out.idle);
    g.onPeriodicEmit(out); // no record since the last emit: inactivity starts now
    clock.advanceTime(14_000, TimeUnit.MILLISECONDS);
    g.onPeriodicEmit(out);
    assertTrue(!out.idle);
    clock.advanceTime(2_000, TimeUnit.MILLISECONDS);
    g.onPeriodicEmit(out);
    assertTrue(out.idle, "no record for longer than the idleness timeout");
    Decoded<Sample> next = Decoded.ok(process(21, 1, 1, 1));
    g.onEvent(next, ts.extractTimestamp(next, Long.MIN_VALUE), out);
    g.onPeriodicEmit(out);
    assertTrue(!out.idle);
    assertEquals(T0 + 20_999 - 5_000 - 1, out.last);
  }

  public static final class Output implements WatermarkOutput {
    public long last = Long.MIN_VALUE;
    public boolean idle;

    @Override
    public void emitWatermark(Watermark w) {
      last = w.getTimestamp();
      idle = false;
    }

    @Override
    public void markIdle() {
      idle = true;
    }

    @Override
    public void markActive() {
      idle = false;
    }
  }

  public static final class ListCollector<T> implements org.apache.flink.util.Collector<T> {
    final List<T> list;

    public ListCollector(List<T> list) {
      this.list = list;
    }

    @Override
    public void collect(T t) {
      list.add(t);
    }

    @Override
    public void close() {}
  }
}
