package io.wattgraph.graph.topology;

/**
 * One monitored host, how many processes and containers run on it (via RUNS_ON), and the end of its latest
 * metrics window (Unix ns; null when the stream job wrote none): how current the job's data is; and its idle power
 * in that window (W, the agent's idle share; null when none was measured).
 */
public record HostSummary(String id, long processCount, long containerCount, Long metricsWindowEndNs,
                          Double idlePowerW) {
}
