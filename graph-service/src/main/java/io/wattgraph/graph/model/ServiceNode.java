package io.wattgraph.graph.model;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * A vertex of the analysis graph: a process, or a group of them (container, pod, service, namespace,
 * host) after aggregation, or an external peer.
 *
 * @param id unique id (a Process id at process level, {@code container:ID}, {@code pod:NS/NAME}, ... above it)
 * @param kind {@code process}, {@code container}, {@code pod}, {@code service}, {@code namespace}, {@code host} or {@code external}
 * @param name display name (comm, process type, container/pod/service name, host id, address)
 * @param hostId the host, when all members run on one host
 * @param namespace Kubernetes namespace, when known and common to all members
 * @param processType process type from the command line (see {@code ProcessTypes})
 * @param members how many process-level nodes this node stands for
 * @param cores cores of the host (for PowerThesis Eq. 3.3), when known
 * @param metrics windowed metrics
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ServiceNode(
        String id,
        String kind,
        String name,
        String hostId,
        String containerId,
        String pod,
        String namespace,
        String service,
        String processType,
        int members,
        Double cores,
        Metrics metrics) {

    public boolean external() {
        return "external".equals(kind);
    }

    public static ServiceNode process(String id, String name, String hostId, String containerId, String processType,
                                      Double cores, Metrics metrics) {
        return new ServiceNode(id, "process", name, hostId, containerId, null, null, null, processType, 1, cores,
                metrics);
    }

    public static ServiceNode external(String id) {
        return new ServiceNode(id, "external", id, null, null, null, null, null, "external", 1, null, Metrics.NONE);
    }

    public ServiceNode withKubernetes(String podName, String ns, String svc) {
        return new ServiceNode(id, kind, name, hostId, containerId, podName, ns, svc, processType, members, cores,
                metrics);
    }
}
