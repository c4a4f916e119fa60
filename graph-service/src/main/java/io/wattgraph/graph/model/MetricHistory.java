package io.wattgraph.graph.model;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * An entity's recent windows as the stream job keeps them on its node ({@code history*} lists, stream-jobs
 * README "History"): one entry per window, oldest first; a figure the window did not have is null.
 */
public record MetricHistory(List<Window> windows) {

    /** One window: its end (Unix ns), revision, CPU (cores), power (W), requests served per second. */
    public record Window(long windowEndNs, long revision, Double cpuUsage, Double powerW, Double requestRate) {
    }

    /** Summary of one figure over the windows that have it; null fields when none has. */
    public record Summary(int windows, Double mean, Double p95, Double max) {
    }

    public static final MetricHistory EMPTY = new MetricHistory(List.of());

    /** The windows ending in [fromNs, toNs] (either bound null: open). */
    public MetricHistory between(Long fromNs, Long toNs) {
        return new MetricHistory(windows.stream()
                .filter(w -> (fromNs == null || w.windowEndNs() >= fromNs) && (toNs == null || w.windowEndNs() <= toNs))
                .toList());
    }

    public Summary cpuUsage() {
        return summary(windows.stream().map(Window::cpuUsage).toList());
    }

    public Summary powerW() {
        return summary(windows.stream().map(Window::powerW).toList());
    }

    public Summary requestRate() {
        return summary(windows.stream().map(Window::requestRate).toList());
    }

    /**
     * Mean, 95th percentile (nearest rank: the smallest value with at least 95 % of the values at or below it)
     * and maximum of the non-null values.
     */
    public static Summary summary(Collection<Double> values) {
        List<Double> v = new ArrayList<>();
        for (Double d : values) {
            if (d != null) {
                v.add(d);
            }
        }
        if (v.isEmpty()) {
            return new Summary(0, null, null, null);
        }
        v.sort(null);
        double sum = 0;
        for (double d : v) {
            sum += d;
        }
        int rank = (int) Math.ceil(0.95 * v.size());
        return new Summary(v.size(), sum / v.size(), v.get(rank - 1), v.get(v.size() - 1));
    }

    /**
     * CPU per window summed over several entities (a workload's containers or processes), by window end;
     * an entity without a window counts 0 for it (it did not run then). Windows none of them measured are left out.
     */
    public static List<Double> summedCpu(Collection<MetricHistory> parts) {
        Map<Long, Double> sum = new TreeMap<>();
        for (MetricHistory h : parts) {
            for (Window w : h.windows()) {
                if (w.cpuUsage() != null) {
                    sum.merge(w.windowEndNs(), w.cpuUsage(), Double::sum);
                }
            }
        }
        return new ArrayList<>(sum.values());
    }

    /** From the node's parallel lists; NaN (the stream job's "unknown") becomes null. Null lists: no history. */
    public static MetricHistory of(List<?> ends, List<?> revisions, List<?> cpu, List<?> power, List<?> rate) {
        if (ends == null) {
            return EMPTY;
        }
        List<Window> windows = new ArrayList<>();
        for (int i = 0; i < ends.size(); i++) {
            if (number(ends, i) == null) {
                continue; // a wrongly typed entry counts as absent
            }
            windows.add(new Window(number(ends, i).longValue(), number(revisions, i) == null ? 0
                    : number(revisions, i).longValue(), dbl(cpu, i), dbl(power, i), dbl(rate, i)));
        }
        return new MetricHistory(windows);
    }

    private static Number number(List<?> list, int i) {
        return list != null && i < list.size() && list.get(i) instanceof Number n ? n : null;
    }

    private static Double dbl(List<?> list, int i) {
        Number n = number(list, i);
        return n == null || Double.isNaN(n.doubleValue()) ? null : n.doubleValue();
    }
}
