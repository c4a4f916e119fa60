package io.wattgraph.graph.analysis;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.wattgraph.graph.model.Metrics;
import io.wattgraph.graph.model.ServiceEdge;
import io.wattgraph.graph.model.ServiceGraph;
import io.wattgraph.graph.model.ServiceNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Operational analysis of PowerThesis §3.3.2 over an open model of the graph:
 * <ul>
 *   <li>λ(t), the system arrival rate: the sum of {@code requestRate} over edges from External nodes into the
 *       application (or a value given by the caller)</li>
 *   <li>PowerThesis Eq. 3.3 utilisation U_i = cpuUsage_i / min(#cores of the host, #threads_i) (whichever of the
 *       two is known when only one is)</li>
 *   <li>PowerThesis Eq. 3.4 service demand D_i = U_i / λ</li>
 *   <li>PowerThesis Eq. 3.5 saturation arrival rate λ_sat = 1 / D_max; the node with D_max is the bottleneck</li>
 *   <li>per node, as PowerThesis Table 3.4's "max λ_i": λ_i / U_i, with λ_i the node's {@code requestRate}
 *       (else the sum of its incoming edges' request rates)</li>
 * </ul>
 * Rows are sorted by utilisation, highest first, like PowerThesis Table 3.4.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record OperationalAnalysis(
        Double arrivalRate,
        String arrivalRateSource,
        Double saturationArrivalRate,
        String bottleneck,
        List<Row> nodes) {

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Row(String id, String name, Double utilization, Double arrivalRate, Double maxArrivalRate,
                      Double serviceDemand, Double powerW, Double threads, Double cores, Double latencyAvgMs) {
    }

    public static OperationalAnalysis of(ServiceGraph graph, Double arrivalRateOverride) {
        Map<String, ServiceNode> byId = graph.nodesById();
        Double lambda = arrivalRateOverride;
        String source = "request";
        Map<String, Double> incoming = new HashMap<>();
        double external = 0;
        boolean anyExternal = false;
        for (ServiceEdge e : graph.edges()) {
            if (e.requestRate() == null || e.source().equals(e.target())) {
                continue;
            }
            incoming.merge(e.target(), e.requestRate(), Double::sum);
            if (byId.get(e.source()).external() && !byId.get(e.target()).external()) {
                external += e.requestRate();
                anyExternal = true;
            }
        }
        if (lambda == null) {
            lambda = anyExternal && external > 0 ? external : null;
            source = lambda == null ? "unknown" : "external-edges";
        }
        List<Row> rows = new ArrayList<>();
        Row bottleneck = null;
        for (ServiceNode n : graph.nodes()) {
            if (n.external()) {
                continue;
            }
            Metrics m = n.metrics();
            Double u = utilization(m.cpuUsage(), n.cores(), m.threads());
            Double rate = m.requestRate() != null ? m.requestRate() : incoming.get(n.id());
            Double maxRate = u != null && u > 0 && rate != null ? rate / u : null;
            Double demand = u != null && lambda != null ? u / lambda : null;
            Row row = new Row(n.id(), n.name(), u, rate, maxRate, demand, m.powerW(), m.threads(), n.cores(),
                    m.latencyAvgMs());
            rows.add(row);
            if (u != null && (bottleneck == null || u > bottleneck.utilization())) {
                bottleneck = row; // D_i = U_i / λ with one λ for all: max D is max U
            }
        }
        rows.sort(Comparator.comparing((Row r) -> r.utilization() == null ? -1.0 : r.utilization()).reversed()
                .thenComparing(Row::id));
        Double saturation = bottleneck != null && bottleneck.serviceDemand() != null && bottleneck.serviceDemand() > 0
                ? 1.0 / bottleneck.serviceDemand() : null;
        return new OperationalAnalysis(lambda, source, saturation, bottleneck == null ? null : bottleneck.id(), rows);
    }

    /** PowerThesis Eq. 3.3. */
    public static Double utilization(Double cpuUsage, Double cores, Double threads) {
        if (cpuUsage == null) {
            return null;
        }
        Double parallelism;
        if (cores == null || threads == null) {
            parallelism = cores == null ? threads : cores;
        } else {
            parallelism = Math.min(cores, threads);
        }
        return parallelism == null || parallelism <= 0 ? null : cpuUsage / parallelism;
    }
}
