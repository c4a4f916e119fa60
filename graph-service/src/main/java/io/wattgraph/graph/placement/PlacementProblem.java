package io.wattgraph.graph.placement;

import java.util.List;

/**
 * A placement instance: workloads (containers or pods) with CPU (cores) and memory demands and their current
 * node, nodes with capacities, and the traffic between workloads (bytes, both directions summed per pair).
 * The objective (BlackBox §7.4): minimise {@code crossNodeBytes + nodeWeight * nodesUsed} without exceeding any
 * node's CPU or memory.
 */
public record PlacementProblem(List<Workload> workloads, List<NodeCapacity> nodes, List<Traffic> traffic,
                               Double nodeWeight) {

    /** A placeable unit. {@code namespace} and {@code name} are used for the Kubernetes patches. */
    public record Workload(String id, double cpu, double memory, String currentNode, String namespace, String name) {
        public Workload(String id, double cpu, double memory, String currentNode) {
            this(id, cpu, memory, currentNode, null, id);
        }
    }

    public record NodeCapacity(String id, double cpu, double memory) {
    }

    public record Traffic(String a, String b, double bytes) {
    }
}
