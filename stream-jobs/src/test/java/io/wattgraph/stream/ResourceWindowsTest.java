package io.wattgraph.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.wattgraph.schema.WindowMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkGeneratorSupplier;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.clock.ManualClock;
import org.apache.flink.util.clock.RelativeClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The production window operator ({@link ResourceMetrics#windows}) in Flink's operator harness:
 * watermarks are given by hand, so disorder and lateness are exact. Window 10 s, lateness 5 s.
 */
class ResourceWindowsTest {
  /** A window boundary (Unix ms, multiple of 10 s). */
  static final long T0 = 1_700_000_000_000L;
  static final long S = 1_000_000_000L;
  static final String P = "host-a/42/900";

  KeyedOneInputStreamOperatorTestHarness<String, MetricInput, MetricsRow> h;

  @BeforeEach
  void setUp() throws Exception {
    JobConfig c = new JobConfig();
    c.windowMs = 10_000;
    c.allowedLatenessMs = 5_000;
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    SingleOutputStreamOperator<MetricsRow> rows =
        ResourceMetrics.windows(env.fromData(new MetricInput()).returns(MetricInput.class), c);
    @SuppressWarnings("unchecked")
    OneInputTransformation<MetricInput, MetricsRow> t =
        (OneInputTransformation<MetricInput, MetricsRow>) rows.getTransformation();
    h = new KeyedOneInputStreamOperatorTestHarness<>(t.getOperatorFactory(), new ResourceMetrics.ByWindowKey(),
        Types.STRING);
    h.open();
  }

  @AfterEach
  void tearDown() throws Exception {
    h.close();
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

  /** Feeds a sample like the pipeline does: split into its window inputs, event time = its interval end. */
  void feed(Sample s) throws Exception {
    List<MetricInput> inputs = new ArrayList<>();
    DecodedSample d = DecodedSample.ok(s);
    new SplitResourceSamples().processElement(d, null, new ListCollector<>(inputs));
    for (MetricInput in : inputs) {
      h.processElement(new StreamRecord<>(in, d.eventTimeMs()));
    }
  }

  void watermarkAtSecond(double s) throws Exception {
    h.processWatermark(T0 + Math.round(s * 1000));
  }

  List<MetricsRow> rows() {
    List<MetricsRow> out = new ArrayList<>();
    for (Object o : h.extractOutputValues()) {
      out.add((MetricsRow) o);
    }
    return out;
  }

  int late() {
    return h.getSideOutput(ResourceMetrics.LATE) == null ? 0 : h.getSideOutput(ResourceMetrics.LATE).size();
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
    WatermarkGenerator<DecodedSample> g = ResourceMetrics.watermarks(c).createWatermarkGenerator(
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
    var ts = ResourceMetrics.watermarks(c).createTimestampAssigner(null);
    Output out = new Output();
    DecodedSample late = DecodedSample.ok(process(20, 1, 1, 1));
    DecodedSample early = DecodedSample.ok(process(12, 1, 1, 1));
    for (DecodedSample d : List.of(late, early)) {
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
    DecodedSample next = DecodedSample.ok(process(21, 1, 1, 1));
    g.onEvent(next, ts.extractTimestamp(next, Long.MIN_VALUE), out);
    g.onPeriodicEmit(out);
    assertTrue(!out.idle);
    assertEquals(T0 + 20_999 - 5_000 - 1, out.last);
  }

  static final class Output implements WatermarkOutput {
    long last = Long.MIN_VALUE;
    boolean idle;

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

  static final class ListCollector<T> implements org.apache.flink.util.Collector<T> {
    final List<T> list;

    ListCollector(List<T> list) {
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
