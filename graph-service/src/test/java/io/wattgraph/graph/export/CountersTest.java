package io.wattgraph.graph.export;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.graph.export.GraphMetricsReader.EntityRow;
import io.wattgraph.graph.model.MetricHistory;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.schema.TransactionHistograms;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The export's counters only grow, count each window and each byte once, also when entities come and go. */
class CountersTest {

    static final long W = 10_000_000_000L;

    /** A container whose history holds windows ending at {@code ends} (in W) with these powers and revisions. */
    static EntityRow row(long[] ends, double[] power, long[] revisions) {
        List<MetricHistory.Window> windows = new ArrayList<>();
        for (int i = 0; i < ends.length; i++) {
            windows.add(new MetricHistory.Window(ends[i] * W, revisions[i], null,
                    Double.isNaN(power[i]) ? null : power[i], null));
        }
        long last = ends[ends.length - 1] * W;
        return new EntityRow("c", "h", null, null, null, Metrics.NONE, null, last - W, last, 0, null,
                new MetricHistory(windows));
    }

    @Test
    void energyCountsEachWindowOnceAndLateSamplesOnlyAdd() {
        Counters c = new Counters();
        assertThat(c.energy("c", row(new long[] {1, 2, 3}, new double[] {1, 2, Double.NaN}, new long[] {0, 0, 0})))
                .isEqualTo(30.0);
        c.commit(0);
        // Window 3 got its power by a late revision, window 4 is new; window 1 left the tail.
        assertThat(c.energy("c", row(new long[] {2, 3, 4}, new double[] {2, 5, 4}, new long[] {0, 1, 0})))
                .isEqualTo(30.0 + 50 + 40);
        c.commit(0);
        // The same tail again: nothing new. A revision with less power does not take energy back.
        assertThat(c.energy("c", row(new long[] {2, 3, 4}, new double[] {2, 5, 4}, new long[] {0, 1, 0})))
                .isEqualTo(120.0);
        c.commit(0);
        assertThat(c.energy("c", row(new long[] {2, 3, 4}, new double[] {2, 1, 4}, new long[] {0, 2, 0})))
                .isEqualTo(120.0);
    }

    @Test
    void anEntityBackFromStaleCountsOnlyWindowsAfterThePreviousHorizon() {
        Counters c = new Counters();
        c.energy("c", row(new long[] {1, 2}, new double[] {1, 1}, new long[] {0, 0}));
        c.commit(0);
        c.commit(5 * W); // a refresh without the container (stale): forgotten
        // Back: its tail still has windows 1 and 2 (counted before the gap); only 6 and 7 are new.
        assertThat(c.energy("c", row(new long[] {1, 2, 6, 7}, new double[] {1, 1, 3, 3}, new long[] {0, 0, 0, 0})))
                .isEqualTo(60.0);
    }

    @Test
    void energyWithoutHistoryCountsTheLatestWindowsEnergy() {
        Counters c = new Counters();
        EntityRow latest = new EntityRow("c", null, null, null, null, Metrics.NONE, null, 0L, W, 0, 7.5,
                MetricHistory.EMPTY);
        assertThat(c.energy("c", latest)).isEqualTo(7.5);
        EntityRow none = new EntityRow("c", null, null, null, null, Metrics.NONE, null, null, null, 0, null,
                MetricHistory.EMPTY);
        assertThat(c.energy("d", none)).isNaN();
    }

    static ServiceEdge edge(String source, long c2s, long s2c, long connections, long firstSeen) {
        return new ServiceEdge(source, "db", c2s, s2c, connections, connections, 0, firstSeen, firstSeen + 1,
                null, null, null, null, null, null, null, null, null, null, null, null);
    }

    @Test
    void workloadEdgeCountersAddEachProcessEdgesGrowthAndNeverShrink() {
        Counters c = new Counters();
        c.edge("a>db", "web>db", edge("a", 100, 1000, 2, 0), null);
        c.edge("b>db", "web>db", edge("b", 10, 20, 1, 0), null);
        assertThat(counters(c, "web>db")).containsExactly(110, 1020, 3, 3);
        c.commit(10 * W);
        // a grew; b went stale (not read): the total keeps b's share.
        c.edge("a>db", "web>db", edge("a", 150, 1500, 3, 0), null);
        assertThat(counters(c, "web>db")).containsExactly(160, 1520, 4, 4);
        c.commit(20 * W);
        // b is back with its old totals (first seen long ago): counted from here, not again from 0. A new process
        // edge first seen after the previous horizon counts whole.
        c.edge("a>db", "web>db", edge("a", 150, 1500, 3, 0), null);
        c.edge("b>db", "web>db", edge("b", 15, 25, 1, 0), null);
        c.edge("n>db", "web>db", edge("n", 7, 8, 1, 25 * W), null);
        assertThat(counters(c, "web>db")).containsExactly(167, 1528, 5, 5);
        c.commit(30 * W);
        c.edge("b>db", "web>db", edge("b", 20, 30, 2, 0), null);
        assertThat(counters(c, "web>db")).containsExactly(172, 1533, 6, 6);
    }

    /** The first four totals of a workload edge: bytes both ways, connections, estimated connections. */
    static double[] counters(Counters c, String workloadKey) {
        return java.util.Arrays.copyOf(c.edgeTotals(workloadKey), Counters.EDGE_COUNTERS);
    }

    /** A round-trip histogram whose totals hold {@code n} in bucket {@code bucket} (of 1 ms each). */
    static ExportedHistogram rtt(int bucket, long n) {
        long[] counts = new long[TransactionHistograms.OCTAVE_BUCKETS];
        counts[bucket] = n;
        return new ExportedHistogram(counts, n * 1e-3);
    }

    /** Exact counts, the sum within rounding. */
    static void same(ExportedHistogram actual, ExportedHistogram expected) {
        assertThat(actual.counts()).containsExactly(expected.counts());
        assertThat(actual.sumSeconds()).isCloseTo(expected.sumSeconds(), org.assertj.core.api.Assertions.within(1e-12));
    }

    static ExportedHistogram plus(ExportedHistogram a, ExportedHistogram b) {
        long[] counts = a.counts().clone();
        for (int i = 0; i < counts.length; i++) {
            counts[i] += b.counts()[i];
        }
        return new ExportedHistogram(counts, a.sumSeconds() + b.sumSeconds());
    }

    /**
     * A workload edge's round-trip histogram is cumulative over windows and monotonic bucket by bucket: each process
     * edge's growth is added, a stale process edge's share stays, one back from staleness counts from there on; a
     * restart of the service starts from the process edges' totals (a reset only where shares had gone stale).
     */
    @Test
    void workloadEdgeHistogramsOnlyGrowAcrossWindowsStalenessAndARestart() {
        Counters c = new Counters();
        ServiceEdge a = edge("a", 1, 1, 1, 0);
        ServiceEdge b = edge("b", 1, 1, 1, 0);
        // Windows 1 and 2 of a (3 in bucket 9, then 2 more and 1 in bucket 10), window 1 of b (4 in bucket 9).
        c.edge("a>db", "web>db", a, rtt(9, 3));
        c.edge("b>db", "web>db", b, rtt(9, 4));
        same(c.edgeRtt("web>db"), rtt(9, 7));
        c.commit(10 * W);
        ExportedHistogram aNow = plus(rtt(9, 5), rtt(10, 1));
        c.edge("a>db", "web>db", a, aNow); // b stale
        ExportedHistogram seen = c.edgeRtt("web>db");
        same(seen, plus(rtt(9, 9), rtt(10, 1)));
        c.commit(20 * W);
        // b back with 6 in bucket 9 (2 more while stale, first seen long ago): only its growth from here counts.
        c.edge("a>db", "web>db", a, aNow);
        c.edge("b>db", "web>db", b, rtt(9, 6));
        same(c.edgeRtt("web>db"), seen);
        c.commit(30 * W);
        c.edge("a>db", "web>db", a, plus(aNow, rtt(3, 2)));
        c.edge("b>db", "web>db", b, rtt(9, 7));
        ExportedHistogram before = c.edgeRtt("web>db");
        same(before, plus(plus(rtt(9, 10), rtt(10, 1)), rtt(3, 2)));
        c.commit(40 * W);

        // A restart: new counters, the same graph. The totals are the process edges' own (a reset where b's
        // stale share had been left out), and from then on grow again.
        Counters restarted = new Counters();
        restarted.edge("a>db", "web>db", a, plus(aNow, rtt(3, 2)));
        restarted.edge("b>db", "web>db", b, rtt(9, 7));
        ExportedHistogram after = restarted.edgeRtt("web>db");
        same(after, plus(plus(rtt(9, 12), rtt(10, 1)), rtt(3, 2)));
        restarted.commit(50 * W);
        restarted.edge("a>db", "web>db", a, plus(plus(aNow, rtt(3, 2)), rtt(4, 1)));
        restarted.edge("b>db", "web>db", b, rtt(9, 7));
        for (int i = 0; i < TransactionHistograms.OCTAVE_BUCKETS; i++) {
            assertThat(restarted.edgeRtt("web>db").counts()[i]).isGreaterThanOrEqualTo(after.counts()[i]);
        }
        assertThat(restarted.edgeRtt("web>db").count()).isEqualTo(after.count() + 1);
    }

    @Test
    void anEdgeWithoutRoundTripsHasNoHistogram() {
        Counters c = new Counters();
        c.edge("a>db", "web>db", edge("a", 1, 1, 1, 0), null);
        assertThat(c.edgeRtt("web>db")).isNull();
    }

    @Test
    void aFailedRefreshCountsNothing() {
        Counters c = new Counters();
        c.edge("a>db", "web>db", edge("a", 100, 1000, 2, 0), null);
        c.commit(0);
        c.edge("a>db", "web>db", edge("a", 200, 2000, 2, 0), null);
        c.rollback();
        c.edge("a>db", "web>db", edge("a", 200, 2000, 2, 0), null);
        assertThat(counters(c, "web>db")).containsExactly(200, 2000, 2, 2);
    }
}
