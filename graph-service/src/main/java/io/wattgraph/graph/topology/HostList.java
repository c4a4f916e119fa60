package io.wattgraph.graph.topology;

import java.util.List;

/** The JSON body of {@code GET /api/v1/hosts}; an object rather than a bare array so fields can be added. */
public record HostList(List<HostSummary> hosts) {
}
