package io.wattgraph.graph.topology;

/** One monitored host and how many processes and containers run on it (via RUNS_ON). */
public record HostSummary(String id, long processCount, long containerCount) {
}
