package io.wattgraph.graph.model;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * Windowed metrics of a node (process, container, pod, ... after aggregation). Every field is nullable:
 * the stream job writes them as node properties when it has them (see docs/graph-model.md).
 *
 * @param cpuUsage CPU used, in cores (1.0 = one core busy)
 * @param threads number of threads of the workload
 * @param requestRate requests served per second (server side)
 * @param latencyAvgMs average server-side latency
 * @param latencyP50Ms 50th percentile latency (ms); likewise P75, P90, P99
 * @param powerW power drawn, watts
 * @param memoryBytes memory used
 * @param cpuRequest Kubernetes CPU request, cores
 * @param memoryRequestBytes Kubernetes memory request
 * @param serviceTimeMs average service time (own work, without downstream calls), when measured
 * @param utilization PowerThesis Eq. 3.3 utilisation written by the stream job (0..1); a group takes its busiest
 *     member's
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Metrics(
        Double cpuUsage,
        Double threads,
        Double requestRate,
        Double latencyAvgMs,
        Double latencyP50Ms,
        Double latencyP75Ms,
        Double latencyP90Ms,
        Double latencyP99Ms,
        Double powerW,
        Double memoryBytes,
        Double cpuRequest,
        Double memoryRequestBytes,
        Double serviceTimeMs,
        Double utilization) {

    public static final Metrics NONE = new Metrics(null, null, null, null, null, null, null, null, null, null,
            null, null, null);

    /** Without {@code utilization} (tests, synthetic graphs). */
    public Metrics(Double cpuUsage, Double threads, Double requestRate, Double latencyAvgMs, Double latencyP50Ms,
                   Double latencyP75Ms, Double latencyP90Ms, Double latencyP99Ms, Double powerW, Double memoryBytes,
                   Double cpuRequest, Double memoryRequestBytes, Double serviceTimeMs) {
        this(cpuUsage, threads, requestRate, latencyAvgMs, latencyP50Ms, latencyP75Ms, latencyP90Ms, latencyP99Ms,
                powerW, memoryBytes, cpuRequest, memoryRequestBytes, serviceTimeMs, null);
    }

    public Double latencyMs(Percentile p) {
        return switch (p) {
            case AVG -> latencyAvgMs;
            case P50 -> latencyP50Ms;
            case P75 -> latencyP75Ms;
            case P90 -> latencyP90Ms;
            case P99 -> latencyP99Ms;
        };
    }

    /** Combines the metrics of several members: additive quantities are summed, latencies take the maximum. */
    public static Metrics combine(Iterable<Metrics> members) {
        Double cpu = null, threads = null, rate = null, avg = null, p50 = null, p75 = null, p90 = null, p99 = null;
        Double power = null, mem = null, cpuReq = null, memReq = null, svc = null, util = null;
        for (Metrics m : members) {
            cpu = sum(cpu, m.cpuUsage);
            threads = sum(threads, m.threads);
            rate = sum(rate, m.requestRate);
            avg = max(avg, m.latencyAvgMs);
            p50 = max(p50, m.latencyP50Ms);
            p75 = max(p75, m.latencyP75Ms);
            p90 = max(p90, m.latencyP90Ms);
            p99 = max(p99, m.latencyP99Ms);
            power = sum(power, m.powerW);
            mem = sum(mem, m.memoryBytes);
            cpuReq = sum(cpuReq, m.cpuRequest);
            memReq = sum(memReq, m.memoryRequestBytes);
            svc = max(svc, m.serviceTimeMs);
            util = max(util, m.utilization);
        }
        return new Metrics(cpu, threads, rate, avg, p50, p75, p90, p99, power, mem, cpuReq, memReq, svc, util);
    }

    /** This node's own values where set, else {@code fallback}'s (e.g. a Container's own metrics over its processes' sum). */
    public Metrics orElse(Metrics fallback) {
        return new Metrics(
                or(cpuUsage, fallback.cpuUsage), or(threads, fallback.threads), or(requestRate, fallback.requestRate),
                or(latencyAvgMs, fallback.latencyAvgMs), or(latencyP50Ms, fallback.latencyP50Ms),
                or(latencyP75Ms, fallback.latencyP75Ms), or(latencyP90Ms, fallback.latencyP90Ms),
                or(latencyP99Ms, fallback.latencyP99Ms), or(powerW, fallback.powerW),
                or(memoryBytes, fallback.memoryBytes), or(cpuRequest, fallback.cpuRequest),
                or(memoryRequestBytes, fallback.memoryRequestBytes), or(serviceTimeMs, fallback.serviceTimeMs),
                or(utilization, fallback.utilization));
    }

    private static Double or(Double a, Double b) {
        return a != null ? a : b;
    }

    static Double sum(Double a, Double b) {
        if (a == null) {
            return b;
        }
        return b == null ? a : a + b;
    }

    static Double max(Double a, Double b) {
        if (a == null) {
            return b;
        }
        return b == null ? a : Math.max(a, b);
    }
}
