package io.wattgraph.graph;

import org.springframework.stereotype.Component;

/**
 * Checks a host id from a request before it is used as a query parameter. The query is parameterised
 * anyway; this only rejects values no agent could have written (agents take --host-id from a command
 * line), so that typos and garbage get a 400 rather than a silently empty graph.
 */
@Component
public class HostIdValidator {

    /** DNS names are at most 253 characters; host ids are hostnames or shorter. */
    static final int MAX_LENGTH = 253;

    public String validate(String parameter, String value) {
        if (value == null || value.isBlank()) {
            throw new InvalidParameterException(parameter, "must not be blank");
        }
        if (value.length() > MAX_LENGTH) {
            throw new InvalidParameterException(parameter, "must be at most " + MAX_LENGTH + " characters");
        }
        if (value.chars().anyMatch(Character::isISOControl)) {
            throw new InvalidParameterException(parameter, "must not contain control characters");
        }
        return value;
    }
}
