package io.wattgraph.graph.export;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.wattgraph.graph.export.GraphMetricsReader.EntityRow;
import io.wattgraph.graph.export.GraphMetricsReader.Rows;
import io.wattgraph.graph.model.MetricHistory;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Caps per kind (the heaviest kept, the rest counted) and the meters that follow each snapshot. */
class SnapshotBuilderTest {

    static final long NOW = 1_000 * CountersTest.W;

    static MetricsExportProperties properties(int maxContainers, int maxEdges) {
        return new MetricsExportProperties(true, Duration.ofSeconds(15), Duration.ofMinutes(5), "service", 10, 10,
                maxContainers, maxEdges, true);
    }

    static EntityRow container(String id, Double power, Double cpu, String pod) {
        return new EntityRow(id, "h", pod, "ns", null, new Metrics(cpu, null, null, null, null, null, null, null,
                power, null, null, null, null), null, NOW - CountersTest.W, NOW, 0, null, MetricHistory.EMPTY);
    }

    /** {@code n} pods each calling the next, pod i sending i bytes. */
    static ServiceGraph chain(int n) {
        List<ServiceNode> nodes = new ArrayList<>();
        List<ServiceEdge> edges = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            nodes.add(ServiceNode.process("p" + i, "java", "h", "c" + i, "java", null, Metrics.NONE)
                    .withKubernetes("pod-" + i, "ns", null));
            if (i > 0) {
                edges.add(ServiceEdge.traffic("p" + (i - 1), "p" + i, i, 0));
            }
        }
        return new ServiceGraph(nodes, edges);
    }

    @Test
    void eachKindIsCutToItsCapKeepingTheHeaviestAndCountingTheRest() {
        Rows rows = new Rows(List.of(), List.of(), List.of(container("a", 5.0, 1.0, "a"), container("b", null, 9.0, "b"),
                container("c", 7.0, 0.1, "c"), container("d", 5.0, 2.0, "d")), chain(5));
        Snapshot s = SnapshotBuilder.build(rows, NOW, NOW - 300 * CountersTest.W, properties(2, 3), new Counters());
        assertThat(s.of(ExportKind.CONTAINER)).extracting(Snapshot.Item::key)
                .containsExactly("container:c", "container:d");
        assertThat(s.omitted()).containsEntry(ExportKind.CONTAINER, 2).containsEntry(ExportKind.EDGE, 1)
                .containsEntry(ExportKind.HOST, 0);
        assertThat(s.of(ExportKind.EDGE)).extracting(i -> i.tags().stream().filter(t -> t.getKey()
                .equals("source_workload")).map(Tag::getValue).findFirst().orElseThrow())
                .containsExactly("pod-3", "pod-2", "pod-1");
    }

    @Test
    void aContainersCgroupWindowBecomesItsMemoryAndThrottlingGauges() {
        EntityRow withCgroup = new EntityRow("a", "h", "a", "ns", null, new Metrics(1.0, null, null, null, null, null,
                null, null, 5.0, 3.0 * (1L << 30), null, null, null), null, NOW - CountersTest.W, NOW, 0, null,
                MetricHistory.EMPTY, new GraphMetricsReader.Cgroup(2.5 * (1L << 30), 0.25, 1.75), CountersTest.rtt(3, 5));
        Rows rows = new Rows(List.of(), List.of(), List.of(withCgroup, container("b", 3.0, 1.0, "b")), chain(1));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ExportedMeters meters = new ExportedMeters(registry);
        meters.apply(SnapshotBuilder.build(rows, NOW, 0, properties(10, 10), new Counters()));
        assertThat(registry.get("wattgraph.container.memory.peak").gauges()).singleElement()
                .satisfies(g -> assertThat(g.getId().getTag("container_id")).isEqualTo("a"))
                .satisfies(g -> assertThat(g.value()).isEqualTo(3221225472.0));
        assertThat(registry.get("wattgraph.container.memory.usage").gauge().value()).isEqualTo(2684354560.0);
        assertThat(registry.get("wattgraph.container.cpu.throttled").gauge().value()).isEqualTo(0.25);
        assertThat(registry.get("wattgraph.container.cpu.peak").gauge().value()).isEqualTo(1.75);
        // a: power, CPU, its 4 cgroup series and its server-time histogram (24 buckets, sum, count); b (no cgroup
        // window, no requests: no such series): power, CPU. No energy without energyJ or history.
        assertThat(meters.series(ExportKind.CONTAINER)).isEqualTo(8 + 26);

        // wattgraph.metrics.export.histograms=false: the same without the histogram.
        MetricsExportProperties off = new MetricsExportProperties(true, Duration.ofSeconds(15), Duration.ofMinutes(5),
                "service", 10, 10, 10, 10, false);
        Snapshot without = SnapshotBuilder.build(rows, NOW, 0, off, new Counters());
        assertThat(without.of(ExportKind.CONTAINER)).allSatisfy(i -> assertThat(i.histograms()).isEmpty());
        meters.apply(without);
        assertThat(meters.series(ExportKind.CONTAINER)).isEqualTo(8);
    }

    /**
     * A container's server-time histogram is the graph's total over windows: it grows as the graph's does, and a
     * restart of the service (new counters) serves the same values, not a reset.
     */
    @Test
    void aContainersHistogramIsTheGraphsTotalAlsoAfterARestart() {
        Counters counters = new Counters();
        ExportedHistogram[] totals = {CountersTest.rtt(5, 20), CountersTest.plus(CountersTest.rtt(5, 20),
                CountersTest.rtt(9, 3))};
        long[] before = null;
        for (ExportedHistogram total : totals) {
            EntityRow row = container("a", 5.0, 1.0, "a").withServerTime(null, total);
            Snapshot s = SnapshotBuilder.build(new Rows(List.of(), List.of(), List.of(row), chain(1)), NOW, 0,
                    properties(10, 10), counters);
            counters.commit(0);
            long[] served = s.of(ExportKind.CONTAINER).get(0).histograms()[0].counts();
            assertThat(served).containsExactly(total.counts());
            if (before != null) {
                for (int i = 0; i < served.length; i++) {
                    assertThat(served[i]).isGreaterThanOrEqualTo(before[i]);
                }
            }
            before = served;
        }
        EntityRow row = container("a", 5.0, 1.0, "a").withServerTime(null, totals[1]);
        Snapshot restarted = SnapshotBuilder.build(new Rows(List.of(), List.of(), List.of(row), chain(1)), NOW, 0,
                properties(10, 10), new Counters());
        assertThat(restarted.of(ExportKind.CONTAINER).get(0).histograms()[0].counts()).containsExactly(before);
    }

    @Test
    void metersFollowTheSnapshots() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        ExportedMeters meters = new ExportedMeters(registry);
        Counters counters = new Counters();
        Rows first = new Rows(List.of(), List.of(), List.of(container("a", 5.0, 1.0, "a"),
                container("b", 3.0, null, "b")), chain(1));
        meters.apply(SnapshotBuilder.build(first, NOW, 0, properties(10, 10), counters));
        counters.commit(0);
        assertThat(registry.get("wattgraph.container.power").gauges()).hasSize(2);
        assertThat(registry.get("wattgraph.container.cpu.usage").gauges()).hasSize(1); // b has no CPU: no series
        assertThat(meters.series(ExportKind.CONTAINER)).isEqualTo(3);

        // a is gone, b got CPU and a pod name (its identity changed: new tags), c is new.
        Rows second = new Rows(List.of(), List.of(), List.of(container("b", 4.0, 0.5, "b-1"),
                container("c", 1.0, 0.2, "c")), chain(1));
        meters.apply(SnapshotBuilder.build(second, NOW, 0, properties(10, 10), counters));
        assertThat(registry.get("wattgraph.container.power").gauges()).extracting(g -> g.getId().getTag("pod"))
                .containsExactlyInAnyOrder("b-1", "c");
        assertThat(registry.get("wattgraph.container.power").tag("pod", "b-1").gauge().value()).isEqualTo(4.0);
        assertThat(registry.get("wattgraph.container.cpu.usage").gauges()).hasSize(2);

        meters.clear();
        assertThat(registry.find("wattgraph.container.power").gauges()).isEmpty();
        assertThat(meters.series(ExportKind.CONTAINER)).isZero();
    }
}
