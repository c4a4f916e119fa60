package io.wattgraph.graph.cypher;

import org.springframework.http.HttpStatus;

/** A query refused before or while running, with the HTTP status to answer. */
public class CypherRejectedException extends RuntimeException {

    private final HttpStatus status;

    public CypherRejectedException(HttpStatus status, String message) {
        super(message);
        this.status = status;
    }

    public HttpStatus status() {
        return status;
    }
}
