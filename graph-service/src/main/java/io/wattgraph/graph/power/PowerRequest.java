package io.wattgraph.graph.power;

import java.util.List;

/**
 * Body of {@code POST /api/v1/power/budgets}. {@code hosts} (with bounds) is required. PRESTO needs
 * {@code slaMs} and reads the pod-level graph ({@code level}, default pod; {@code namespace} filter), with
 * {@code entryPoint} defaulting to the pod receiving most external requests. HyPPO uses
 * {@code proportionalWattsPerCore} (P of PowerThesis Eq. 4.2, default 10 W as in PowerThesis) and
 * {@code containers}, or the graph's containers ({@code powerW}, {@code cpuUsage}, {@code cpuRequest}) when left out.
 */
public record PowerRequest(String policy, Double slaMs, String entryPoint, String level, String namespace,
                           Double proportionalWattsPerCore, List<HostPower> hosts,
                           List<Hyppo.ContainerPower> containers) {
}
