package io.wattgraph.graph.analysis;

import java.util.Locale;

/** Aggregation levels, finest first. A node without the level's key (e.g. no pod) keeps the next finer identity. */
public enum Level {
    PROCESS, CONTAINER, POD, SERVICE, NAMESPACE, HOST;

    public static Level parse(String value) {
        return valueOf(value.trim().toUpperCase(Locale.ROOT));
    }

    public String jsonName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
