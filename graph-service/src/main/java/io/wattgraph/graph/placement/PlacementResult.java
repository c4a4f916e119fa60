package io.wattgraph.graph.placement;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;

/**
 * A recommended placement: the assignment, the objective before (current placement, when every workload has
 * one) and after, the moves, per-node loads, and Kubernetes patches pinning each moved workload to its node.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PlacementResult(
        String method,
        boolean feasible,
        Map<String, String> assignment,
        Double crossNodeBytesBefore,
        double crossNodeBytesAfter,
        Integer nodesUsedBefore,
        int nodesUsedAfter,
        Double costBefore,
        double costAfter,
        double nodeWeight,
        double totalBytes,
        List<Move> moves,
        List<NodeLoad> loads,
        List<KubernetesPatch> patches) {

    public record Move(String workload, String from, String to) {
    }

    /** {@code memoryCapacity} is null for a node whose memory is not known (only its CPU bounds it). */
    public record NodeLoad(String node, double cpu, double cpuCapacity, double memory, Double memoryCapacity,
                           int workloads) {
    }

    /**
     * Patches for a workload's pod template: {@code nodeSelector} on {@code kubernetes.io/hostname}, or the
     * equivalent required node affinity; {@code kubectl} applies the first to a Deployment of that name.
     */
    public record KubernetesPatch(String workload, String namespace, String name, String node,
                                  Map<String, Object> nodeSelectorPatch, Map<String, Object> affinityPatch,
                                  String kubectl) {
    }
}
