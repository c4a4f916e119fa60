package io.wattgraph.graph.export;

import io.wattgraph.graph.export.GraphMetricsReader.EntityRow;
import io.wattgraph.graph.model.MetricHistory;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.schema.TransactionHistograms;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Monotonic counters from what the graph holds, which is per window (energy) or cumulative per process pair
 * (bytes, connections): a Prometheus counter must only grow, also when entities come and go.
 * <ul>
 *   <li>Energy of an entity: each window of its history's tail counted once (power × window length), a later
 *   revision of a window adding what it grew by.</li>
 *   <li>Bytes, connections and client round trips of a workload edge: the growth of each of its process edges'
 *   totals since the previous refresh (the round trips' bucket counts and sum are totals over windows in the graph,
 *   like bytes).</li>
 * </ul>
 * A Container's or Namespace's server times need nothing here: the graph's totals over windows are one entity's,
 * monotonic, and served as they are, also after a restart.
 * Only in memory (the graph stays the one state): at the first refresh the counters start from the history's tail
 * and the edges' totals; a restart is a counter reset, which {@code rate()} and {@code increase()} handle. An entity
 * or process edge not read in a refresh (stale) is forgotten; when it comes back, only windows ending and edges
 * first seen after the previous refresh's horizon are counted, so nothing is counted twice.
 */
final class Counters {

    /** The history tail as last counted, ascending by window end, and the entity's total. */
    private record Energy(long[] ends, long[] revisions, double[] joules, double total) {
    }

    private Map<String, Energy> energy = new HashMap<>();
    private Map<String, Energy> nextEnergy = new HashMap<>();
    private Map<String, double[]> processEdges = new HashMap<>();
    private Map<String, double[]> nextProcessEdges = new HashMap<>();
    private Map<String, double[]> workloadEdges = new HashMap<>();
    private Map<String, double[]> nextWorkloadEdges = new HashMap<>();
    /** Horizon (Unix ns) of the previous refresh; null before the first. */
    private Long previousSinceNs;

    /**
     * The energy counter of entity {@code key} (J) after counting {@code row}'s windows; NaN when the graph has no
     * energy for it (no window length, or neither history nor {@code energyJ}).
     */
    double energy(String key, EntityRow row) {
        Long windowNs = row.windowNs();
        List<MetricHistory.Window> history = row.history().windows();
        int n = history.isEmpty() ? (row.windowEndNs() != null && row.energyJ() != null ? 1 : 0) : history.size();
        if (n == 0 || !history.isEmpty() && windowNs == null) {
            return Double.NaN;
        }
        long[] ends = new long[n];
        long[] revisions = new long[n];
        double[] joules = new double[n];
        if (history.isEmpty()) { // the stream job keeps no history (--history-windows 0): the latest window
            ends[0] = row.windowEndNs();
            revisions[0] = row.revision();
            joules[0] = row.energyJ();
        } else {
            for (int i = 0; i < n; i++) {
                MetricHistory.Window w = history.get(i);
                ends[i] = w.windowEndNs();
                revisions[i] = w.revision();
                joules[i] = w.powerW() == null ? 0 : w.powerW() * windowNs / 1e9;
            }
        }
        Energy before = energy.get(key);
        double total = before == null ? 0 : before.total();
        for (int i = 0; i < n; i++) {
            int at = before == null ? -1 : Arrays.binarySearch(before.ends(), ends[i]);
            if (at >= 0) {
                if (revisions[i] > before.revisions()[at]) {
                    total += Math.max(0, joules[i] - before.joules()[at]); // a late sample only adds energy
                }
            } else if (before == null ? previousSinceNs == null || ends[i] >= previousSinceNs
                    : before.ends().length == 0 || ends[i] > before.ends()[0]) {
                total += joules[i]; // a window not counted yet
            }
        }
        nextEnergy.put(key, new Energy(ends, revisions, joules, total));
        return total;
    }

    /** Positions in an edge's totals: its four counters, then its client round trips' sum (s) and bucket counts. */
    static final int EDGE_COUNTERS = 4, RTT_SUM = 4, RTT_BUCKETS = 5;

    /**
     * Adds process edge {@code processKey}'s growth since the previous refresh to workload edge {@code workloadKey}:
     * request bytes, response bytes, connections, estimated connections, and its client round trips' histogram
     * ({@code rtt}, totals over windows; null: none).
     */
    void edge(String processKey, String workloadKey, ServiceEdge e, ExportedHistogram rtt) {
        double[] now = new double[RTT_BUCKETS + TransactionHistograms.OCTAVE_BUCKETS];
        now[0] = e.bytesClientToServer();
        now[1] = e.bytesServerToClient();
        now[2] = e.connections();
        now[3] = e.connectionsEstimated();
        if (rtt != null) {
            now[RTT_SUM] = rtt.sumSeconds();
            for (int i = 0; i < rtt.counts().length; i++) {
                now[RTT_BUCKETS + i] = rtt.counts()[i];
            }
        }
        double[] before = processEdges.get(processKey);
        boolean counted = before != null || previousSinceNs == null
                || e.firstSeenNs() != null && e.firstSeenNs() >= previousSinceNs;
        double[] totals = nextWorkloadEdges.computeIfAbsent(workloadKey, k -> {
            double[] kept = workloadEdges.get(k);
            return kept == null ? new double[now.length] : kept.clone();
        });
        if (counted) {
            for (int i = 0; i < now.length; i++) {
                totals[i] += Math.max(0, now[i] - (before == null ? 0 : before[i]));
            }
        }
        nextProcessEdges.put(processKey, now);
    }

    /**
     * The workload edge's counters after this refresh: request bytes, response bytes, connections, estimated (the
     * first {@link #EDGE_COUNTERS}).
     */
    double[] edgeTotals(String workloadKey) {
        return nextWorkloadEdges.get(workloadKey);
    }

    /** The workload edge's client round trips after this refresh; null while it has counted none. */
    ExportedHistogram edgeRtt(String workloadKey) {
        double[] totals = nextWorkloadEdges.get(workloadKey);
        long[] counts = new long[TransactionHistograms.OCTAVE_BUCKETS];
        long n = 0;
        for (int i = 0; i < counts.length; i++) {
            counts[i] = Math.round(totals[RTT_BUCKETS + i]);
            n += counts[i];
        }
        return n == 0 ? null : new ExportedHistogram(counts, totals[RTT_SUM]);
    }

    /** Ends a refresh: what was not seen in it is forgotten. */
    void commit(long sinceNs) {
        energy = nextEnergy;
        processEdges = nextProcessEdges;
        workloadEdges = nextWorkloadEdges;
        nextEnergy = new HashMap<>();
        nextProcessEdges = new HashMap<>();
        nextWorkloadEdges = new HashMap<>();
        previousSinceNs = sinceNs;
    }

    /** Drops a refresh that failed half way: the next one counts from the last committed state. */
    void rollback() {
        nextEnergy.clear();
        nextProcessEdges.clear();
        nextWorkloadEdges.clear();
    }
}
