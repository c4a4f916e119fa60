package io.wattgraph.graph.export;

import static org.assertj.core.api.Assertions.assertThat;

import io.wattgraph.graph.export.GraphMetricsReader.EntityRow;
import io.wattgraph.graph.model.MetricHistory;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
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
        c.edge("a>db", "web>db", edge("a", 100, 1000, 2, 0));
        c.edge("b>db", "web>db", edge("b", 10, 20, 1, 0));
        assertThat(c.edgeTotals("web>db")).containsExactly(110, 1020, 3, 3);
        c.commit(10 * W);
        // a grew; b went stale (not read): the total keeps b's share.
        c.edge("a>db", "web>db", edge("a", 150, 1500, 3, 0));
        assertThat(c.edgeTotals("web>db")).containsExactly(160, 1520, 4, 4);
        c.commit(20 * W);
        // b is back with its old totals (first seen long ago): counted from here, not again from 0. A new process
        // edge first seen after the previous horizon counts whole.
        c.edge("a>db", "web>db", edge("a", 150, 1500, 3, 0));
        c.edge("b>db", "web>db", edge("b", 15, 25, 1, 0));
        c.edge("n>db", "web>db", edge("n", 7, 8, 1, 25 * W));
        assertThat(c.edgeTotals("web>db")).containsExactly(167, 1528, 5, 5);
        c.commit(30 * W);
        c.edge("b>db", "web>db", edge("b", 20, 30, 2, 0));
        assertThat(c.edgeTotals("web>db")).containsExactly(172, 1533, 6, 6);
    }

    @Test
    void aFailedRefreshCountsNothing() {
        Counters c = new Counters();
        c.edge("a>db", "web>db", edge("a", 100, 1000, 2, 0));
        c.commit(0);
        c.edge("a>db", "web>db", edge("a", 200, 2000, 2, 0));
        c.rollback();
        c.edge("a>db", "web>db", edge("a", 200, 2000, 2, 0));
        assertThat(c.edgeTotals("web>db")).containsExactly(200, 2000, 2, 2);
    }
}
