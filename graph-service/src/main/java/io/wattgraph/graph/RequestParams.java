package io.wattgraph.graph;

import java.util.Arrays;
import java.util.Locale;

/** Parses request parameters taken as strings, so that every bad value becomes a 400 naming the parameter. */
public final class RequestParams {

    private RequestParams() {
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
}
