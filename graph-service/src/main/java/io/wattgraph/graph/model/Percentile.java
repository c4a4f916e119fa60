package io.wattgraph.graph.model;

import java.util.Locale;

/** Which latency statistic an analysis uses; request values are {@code avg}, {@code p50}, {@code p75}, {@code p90}, {@code p99}. */
public enum Percentile {
    AVG, P50, P75, P90, P99;

    public static Percentile parse(String value) {
        return valueOf(value.trim().toUpperCase(Locale.ROOT));
    }
}
