package io.wattgraph.graph.placement;

import java.util.List;

/**
 * Body of {@code POST /api/v1/placement}. Anything left out is taken from the live graph: {@code workloads}
 * and {@code traffic} from the graph aggregated to {@code level} (default container; CPU from
 * {@code cpuRequest}, else {@code cpuUsage}; memory from {@code memoryRequestBytes}, else {@code memoryBytes};
 * current node from the host), {@code nodes} from Host {@code cores}/{@code memoryBytes}.
 */
public record PlacementRequest(
        String method,
        Double nodeWeight,
        String level,
        String namespace,
        String host,
        List<PlacementProblem.Workload> workloads,
        List<PlacementProblem.NodeCapacity> nodes,
        List<PlacementProblem.Traffic> traffic) {
}
