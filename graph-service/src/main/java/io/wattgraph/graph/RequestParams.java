package io.wattgraph.graph;

import io.wattgraph.graph.analysis.Level;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.Percentile;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** Parses request parameters taken as strings, so that every bad value becomes a 400 naming the parameter. */
public final class RequestParams {

    private static final HostIdValidator NAMES = new HostIdValidator();

    private RequestParams() {
    }

    public static GraphFilter filter(String host, String namespace, String fromNs, String toNs) {
        Long from = nonNegativeLong("fromNs", fromNs);
        Long to = nonNegativeLong("toNs", toNs);
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

    public static String oneOf(String parameter, String value, String fallback, String... allowed) {
        if (value == null) {
            return fallback;
        }
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (!Arrays.asList(allowed).contains(v)) {
            throw new InvalidParameterException(parameter, "must be one of " + String.join(", ", allowed));
        }
        return v;
    }

    public static Long nonNegativeLong(String parameter, String value) {
        if (value == null) {
            return null;
        }
        try {
            long v = Long.parseLong(value.trim());
            if (v < 0) {
                throw new InvalidParameterException(parameter, "must not be negative");
            }
            return v;
        } catch (NumberFormatException e) {
            throw new InvalidParameterException(parameter, "must be an integer (Unix time in ns)");
        }
    }

    public static Double positiveDouble(String parameter, String value) {
        if (value == null) {
            return null;
        }
        try {
            double v = Double.parseDouble(value.trim());
            if (!(v > 0) || Double.isInfinite(v)) {
                throw new InvalidParameterException(parameter, "must be a positive number");
            }
            return v;
        } catch (NumberFormatException e) {
            throw new InvalidParameterException(parameter, "must be a number");
        }
    }

    /** An integer in [min, max]; {@code fallback} when absent. */
    public static int intInRange(String parameter, String value, int fallback, int min, int max) {
        if (value == null) {
            return fallback;
        }
        try {
            int v = Integer.parseInt(value.trim());
            if (v < min || v > max) {
                throw new InvalidParameterException(parameter, "must be between " + min + " and " + max);
            }
            return v;
        } catch (NumberFormatException e) {
            throw new InvalidParameterException(parameter, "must be an integer between " + min + " and " + max);
        }
    }

    /** A number in [0, 1]; 0 when absent. */
    public static double fraction(String parameter, String value) {
        if (value == null) {
            return 0;
        }
        try {
            double v = Double.parseDouble(value.trim());
            if (!(v >= 0 && v <= 1)) {
                throw new InvalidParameterException(parameter, "must be between 0 and 1");
            }
            return v;
        } catch (NumberFormatException e) {
            throw new InvalidParameterException(parameter, "must be a number between 0 and 1");
        }
    }

    private static String names(Enum<?>[] values) {
        return Arrays.stream(values).map(v -> v.name().toLowerCase(Locale.ROOT)).collect(Collectors.joining(", "));
    }
}
