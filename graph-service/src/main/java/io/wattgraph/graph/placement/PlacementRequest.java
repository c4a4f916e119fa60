package io.wattgraph.graph.placement;

import java.util.List;

/**
 * Body of {@code POST /api/v1/placement}. Anything left out is taken from the live graph: {@code workloads}
 * and {@code traffic} from the graph aggregated to {@code level} (default container; CPU from
 * {@code cpuRequest}, else {@code cpuUsage}; memory the larger of {@code memoryRequestBytes} and {@code memoryBytes}
 * (containers' Kubernetes requests and cgroup window peaks, each summed per pod, service or namespace over
 * distinct containers);
 * current node from the host), {@code nodes} from Host {@code cores}/{@code memoryBytes}. {@code cpuBasis}
 * (latest, the default; peak; p95) says which {@code cpuUsage}: the latest window's, or the peak / 95th
 * percentile over the windows the graph keeps (the stream job's history), summed per window over the workload's
 * containers (processes outside containers, or a host's own at host level). With peak or p95, memory is each
 * container's highest over its kept cgroup windows (summed over the workload's containers).
 */
public record PlacementRequest(
        String method,
        Double nodeWeight,
        String level,
        String namespace,
        String host,
        List<PlacementProblem.Workload> workloads,
        List<PlacementProblem.NodeCapacity> nodes,
        List<PlacementProblem.Traffic> traffic,
        String cpuBasis) {
}
