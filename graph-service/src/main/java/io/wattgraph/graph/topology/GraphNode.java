package io.wattgraph.graph.topology;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A node of the JSON graph: {@code id}, {@code kind} and the node's properties flattened beside them
 * (a class rather than a record because {@code @JsonAnyGetter} on records is unreliable across Jackson versions).
 */
@JsonPropertyOrder({"id", "kind"})
public final class GraphNode {

    private final String id;
    private final NodeKind kind;
    private final Map<String, Object> properties;

    public GraphNode(String id, NodeKind kind, Map<String, Object> properties) {
        this.id = id;
        this.kind = kind;
        this.properties = Collections.unmodifiableMap(new LinkedHashMap<>(properties));
    }

    public String getId() {
        return id;
    }

    public NodeKind getKind() {
        return kind;
    }

    @JsonAnyGetter
    public Map<String, Object> getProperties() {
        return properties;
    }
}
