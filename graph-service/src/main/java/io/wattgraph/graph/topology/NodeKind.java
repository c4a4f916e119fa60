package io.wattgraph.graph.topology;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.List;
import java.util.Optional;
import org.neo4j.driver.types.Node;

/**
 * Node kinds of the graph model (docs/contracts.md), with the properties the API exposes for each.
 * The property lists are explicit so that internal or future properties are not leaked by accident.
 */
public enum NodeKind {
    PROCESS("Process", List.of("hostId", "pid", "startTimeNs", "comm", "cmdline", "cgroupId", "containerId")),
    EXTERNAL("External", List.of("address", "port")),
    HOST("Host", List.of()),
    CONTAINER("Container", List.of("hostId"));

    private final String label;
    private final List<String> properties;

    NodeKind(String label, List<String> properties) {
        this.label = label;
        this.properties = properties;
    }

    public List<String> properties() {
        return properties;
    }

    @JsonValue
    public String jsonName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /** The kind named by the node's label; empty for a node outside the model. */
    public static Optional<NodeKind> of(Node node) {
        for (NodeKind kind : values()) {
            if (node.hasLabel(kind.label)) {
                return Optional.of(kind);
            }
        }
        return Optional.empty();
    }
}
