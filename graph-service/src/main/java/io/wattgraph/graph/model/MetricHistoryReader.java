package io.wattgraph.graph.model;

import io.wattgraph.graph.neo4j.Neo4jReader;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.neo4j.driver.Record;
import org.neo4j.driver.Value;
import org.springframework.stereotype.Component;

/** Reads the stream job's per-node window history (constant Cypher per label, ids as parameters). */
@Component
public class MetricHistoryReader {

    /** The labels with a history, by the API's level name. */
    public static final List<String> LEVELS = List.of("process", "container", "host", "namespace");

    private static final String COLUMNS = " RETURN n.id, n.historyWindowEndNs, n.historyRevision, n.historyCpuUsage,"
            + " n.historyPowerW, n.historyRequestRate";

    private static final Map<String, String> BY_IDS = Map.of(
            "process", "UNWIND $ids AS id MATCH (n:Process {id: id})" + COLUMNS,
            "container", "UNWIND $ids AS id MATCH (n:Container {id: id})" + COLUMNS,
            "host", "UNWIND $ids AS id MATCH (n:Host {id: id})" + COLUMNS,
            "namespace", "UNWIND $ids AS id MATCH (n:Namespace {id: id})" + COLUMNS);

    private static final String CONTAINER_MEMORY =
            "UNWIND $ids AS id MATCH (n:Container {id: id}) RETURN n.id, n.historyMemoryBytes";

    private final Neo4jReader reader;

    public MetricHistoryReader(Neo4jReader reader) {
        this.reader = reader;
    }

    /** The history of each node of {@code level} among {@code ids} that exists; an id without a node is absent. */
    public Map<String, MetricHistory> read(String level, Collection<String> ids) {
        Map<String, MetricHistory> out = new HashMap<>();
        if (ids.isEmpty()) {
            return out;
        }
        for (Record r : reader.read("history_" + level, BY_IDS.get(level), Map.of("ids", List.copyOf(ids)), r -> r)) {
            out.put(r.get(0).asString(), MetricHistory.of(list(r.get(1)), list(r.get(2)), list(r.get(3)),
                    list(r.get(4)), list(r.get(5))));
        }
        return out;
    }

    /**
     * Each container's highest memory over its kept cgroup windows ({@code historyMemoryBytes}: each window's peak);
     * a container without any (no list, or only NaN) is absent.
     */
    public Map<String, Double> peakMemory(Collection<String> containerIds) {
        Map<String, Double> out = new HashMap<>();
        if (containerIds.isEmpty()) {
            return out;
        }
        for (Record r : reader.read("history_container_memory", CONTAINER_MEMORY,
                Map.of("ids", List.copyOf(containerIds)), r -> r)) {
            Double max = null;
            for (Object o : r.get(1).isNull() ? List.of() : r.get(1).asList()) {
                if (o instanceof Number n && !Double.isNaN(n.doubleValue())) {
                    max = max == null ? n.doubleValue() : Math.max(max, n.doubleValue());
                }
            }
            if (max != null) {
                out.put(r.get(0).asString(), max);
            }
        }
        return out;
    }

    private static List<Object> list(Value v) {
        return v.isNull() ? null : v.asList();
    }
}
