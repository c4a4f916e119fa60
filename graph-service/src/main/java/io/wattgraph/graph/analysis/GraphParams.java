package io.wattgraph.graph.analysis;

import io.wattgraph.graph.HostIdValidator;
import io.wattgraph.graph.InvalidParameterException;
import io.wattgraph.graph.RequestParams;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.Percentile;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The graph's request parameters (filter, level, percentile), parsed so that a bad value is a 400 naming it. */
public final class GraphParams {

    private static final HostIdValidator NAMES = new HostIdValidator();

    private GraphParams() {
    }

    public static GraphFilter filter(String host, String namespace, String fromNs, String toNs) {
        Long from = RequestParams.nonNegativeLong("fromNs", fromNs);
        Long to = RequestParams.nonNegativeLong("toNs", toNs);
        if (from != null && to != null && from > to) {
            throw new InvalidParameterException("fromNs", "must not be after toNs");
        }
        return new GraphFilter(host == null ? null : NAMES.validate("host", host),
                namespace == null ? null : NAMES.validate("namespace", namespace), from, to);
    }

    public static Level level(String value, Level fallback) {
        if (value == null) {
            return fallback;
        }
        try {
            return Level.parse(value);
        } catch (IllegalArgumentException e) {
            throw new InvalidParameterException("level", "must be one of " + names(Level.values()));
        }
    }

    public static Percentile percentile(String value, Percentile fallback) {
        if (value == null) {
            return fallback;
        }
        try {
            return Percentile.parse(value);
        } catch (IllegalArgumentException e) {
            throw new InvalidParameterException("percentile", "must be one of " + names(Percentile.values()));
        }
    }

    private static String names(Enum<?>[] values) {
        return Arrays.stream(values).map(v -> v.name().toLowerCase(Locale.ROOT)).collect(Collectors.joining(", "));
    }
}
