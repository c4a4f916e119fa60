package io.wattgraph.graph.routes;

/**
 * One HTTP/1.x route of one entity in its latest metrics window (the stream job's {@code httpRoute*}
 * node lists, docs/graph-model.md). {@code role}: SERVER = requests the entity served (latency = server
 * time), CLIENT = requests it issued (latency = client round trip). Latencies in ms.
 */
public record HttpRouteStat(String level, String entityId, String hostId, String role, String method,
                            String path, boolean pathTruncated, long transactions, double requestRate,
                            double meanMs, double p50Ms, double p90Ms, double p99Ms, Long windowEndNs) {

    /** Splits a stored key {@code ROLE METHOD path} ({@code …} appended when the agent cut the path). */
    static String[] parseKey(String key) {
        String[] parts = key.split(" ", 3);
        if (parts.length != 3) {
            return null; // not written by the stream job: skipped
        }
        return parts;
    }
}
