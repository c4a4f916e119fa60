package io.wattgraph.graph;

/**
 * A small graph following docs/contracts.md:
 * <pre>
 *   host-a: curl (host-a/200/2000) -> nginx (host-a/100/1000, in container ctr-1)
 *   host-a: nginx -> postgres (host-b/300/3000)          cross-host
 *   host-b: postgres -> External 203.0.113.7:443         server outside, ip:port
 *   External 198.51.100.9 -> nginx                        client outside, ip only
 *   host-b: host-b/0/0 ("?"), no traffic
 * Metric properties (not exposed by /api/v1/graph): host cores, ctr-1's pod/namespace/service and cpuUsage,
 * nginx's cpuUsage/threads/requestRate/latencyAvgMs/powerW, the visitor edge's requestRate and latencyP99Ms,
 * nginx -> postgres' latencyP99Ms (the one internal edge with a latency: the critical path), and a wrongly
 * typed cpuUsage on curl (read as absent). The stream job's properties (ns): client RTT, server time and network
 * time on nginx -> postgres and curl -> nginx (p90 only), server time percentiles and utilization on postgres;
 * HTTP routes (httpRoute* lists) on nginx (one CLIENT, three SERVER, one truncated) and postgres (one SERVER).
 * The stream job's window history (history* lists, NaN = unknown) on ctr-1 (four windows, a 6-core and 3 GB peak) and
 * host-a (two windows). The stream job's sampled-connection estimate on curl -> nginx (2 connections observed,
 * one of them kept with probability 1/4: estimated 5, 1 sampled); the other edges were written without one.
 * </pre>
 */
final class GraphFixture {

    static final String CYPHER = """
            CREATE (ha:Host {id: 'host-a', cores: 4}), (hb:Host {id: 'host-b', cores: 8})
            CREATE (ctr:Container {id: 'ctr-1', hostId: 'host-a', pod: 'web-0', namespace: 'shop', service: 'web',
                    cpuUsage: 0.5, historyWindowEndNs: [100, 110, 120, 130], historyRevision: [0, 0, 1, 0],
                    historyCpuUsage: [0.5, 6.0, 1.0, 0.5], historyPowerW: [3.0, 9.0, 4.0, 0.0 / 0.0],
                    historyRequestRate: [0.0 / 0.0, 40.0, 50.0, 45.0], historyCgroupWindowEndNs: [100, 110, 120, 130],
                    historyCgroupRevision: [0, 0, 0, 0], historyMemoryBytes: [1.0e9, 3.0e9, 0.0 / 0.0, 2.0e9]})
                    -[:RUNS_ON]->(ha)
            SET ha.historyWindowEndNs = [120, 130], ha.historyRevision = [0, 0], ha.historyCpuUsage = [1.5, 2.5],
                ha.historyPowerW = [30.0, 35.0], ha.historyRequestRate = [0.0 / 0.0, 0.0 / 0.0]
            CREATE (nginx:Process {id: 'host-a/100/1000', hostId: 'host-a', pid: 100, startTimeNs: 1000,
                    comm: 'nginx', cmdline: 'nginx -g daemon off;', cgroupId: 4242, containerId: 'ctr-1',
                    cpuUsage: 0.4, threads: 2, requestRate: 50.0, latencyAvgMs: 12.5, powerW: 3.5,
                    metricsWindowEndNs: 90, httpRouteKeys: ['CLIENT GET /health', 'SERVER GET /users/{id}',
                    'SERVER POST /orders', 'SERVER GET /static/aaaaaaaa…'], httpRouteTransactions: [10, 300, 40, 5],
                    httpRouteRates: [1.0, 30.0, 4.0, 0.5], httpRouteMeanNs: [1000000.0, 2500000.0, 9000000.0, 500000.0],
                    httpRouteP50Ns: [1000000, 2000000, 8000000, 400000],
                    httpRouteP90Ns: [1500000, 4000000, 12000000, 600000],
                    httpRouteP99Ns: [2000000, 7000000, 30000000, 900000]})
            CREATE (curl:Process {id: 'host-a/200/2000', hostId: 'host-a', pid: 200, startTimeNs: 2000,
                    comm: 'curl', cmdline: 'curl http://localhost/', cgroupId: 7, cpuUsage: 'high'})
            CREATE (pg:Process {id: 'host-b/300/3000', hostId: 'host-b', pid: 300, startTimeNs: 3000,
                    comm: 'postgres', cmdline: 'postgres -D /data', cgroupId: 9, serverTimeP50Ns: 2000000,
                    serverTimeP90Ns: 4500000, serverTimeP99Ns: 6500000, utilization: 0.3,
                    httpRouteKeys: ['SERVER GET /stats'], httpRouteTransactions: [2], httpRouteRates: [0.2],
                    httpRouteMeanNs: [20000000.0], httpRouteP50Ns: [20000000], httpRouteP90Ns: [20000000],
                    httpRouteP99Ns: [20000000]})
            CREATE (unknown:Process {id: 'host-b/0/0', hostId: 'host-b', pid: 0, startTimeNs: 0, comm: '?'})
            CREATE (nginx)-[:RUNS_ON]->(ha), (curl)-[:RUNS_ON]->(ha), (pg)-[:RUNS_ON]->(hb), (unknown)-[:RUNS_ON]->(hb)
            CREATE (nginx)-[:IN_CONTAINER]->(ctr)
            CREATE (web:External {id: '203.0.113.7:443', address: '203.0.113.7', port: 443})
            CREATE (visitor:External {id: '198.51.100.9', address: '198.51.100.9'})
            CREATE (curl)-[:TALKS_TO {bytesClientToServer: 100, bytesServerToClient: 2000, connections: 2,
                    connectionsEstimated: 5.0, connectionsSampled: 1, firstSeenNs: 10, lastSeenNs: 20, clientRttP90Ns: 1500000, serverTimeP90Ns: 1000000}]->(nginx)
            CREATE (nginx)-[:TALKS_TO {bytesClientToServer: 500, bytesServerToClient: 7000, connections: 1,
                    firstSeenNs: 30, lastSeenNs: 40, latencyP99Ms: 8.0, clientRttP50Ns: 3000000,
                    clientRttP90Ns: 6000000, clientRttP99Ns: 9000000, serverTimeP50Ns: 2500000, serverTimeP90Ns: 5000000,
                    serverTimeP99Ns: 7000000, networkTimeMeanNs: 400000}]->(pg)
            CREATE (pg)-[:TALKS_TO {bytesClientToServer: 10, bytesServerToClient: 20, connections: 3,
                    firstSeenNs: 50, lastSeenNs: 60}]->(web)
            CREATE (visitor)-[:TALKS_TO {bytesClientToServer: 40, bytesServerToClient: 4000, connections: 1,
                    firstSeenNs: 70, lastSeenNs: 80, requestRate: 50.0, latencyP99Ms: 20.0}]->(nginx)
            """;

    private GraphFixture() {
    }
}
