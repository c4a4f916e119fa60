package io.wattgraph.graph;

import org.neo4j.driver.exceptions.Neo4jException;
import org.neo4j.driver.exceptions.ServiceUnavailableException;
import org.neo4j.driver.exceptions.SessionExpiredException;
import org.neo4j.driver.exceptions.TransientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.MissingServletRequestParameterException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Maps exceptions of the API controllers to JSON {@link ApiError}s. Neo4j being unreachable is an
 * expected operating state (it starts after us, it restarts), so it is a 503 clients may retry, not a 500.
 */
@RestControllerAdvice(basePackages = "io.wattgraph.graph")
public class ApiExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(ApiExceptionHandler.class);

    @ExceptionHandler(InvalidParameterException.class)
    public ResponseEntity<ApiError> invalidParameter(InvalidParameterException e) {
        return body(HttpStatus.BAD_REQUEST, new ApiError(e.getMessage(), 400, e.parameter()));
    }

    @ExceptionHandler(MissingServletRequestParameterException.class)
    public ResponseEntity<ApiError> missingParameter(MissingServletRequestParameterException e) {
        return body(HttpStatus.BAD_REQUEST, new ApiError("missing parameter '" + e.getParameterName() + "'", 400,
                e.getParameterName()));
    }

    @ExceptionHandler(HttpMessageNotReadableException.class)
    public ResponseEntity<ApiError> unreadableBody(HttpMessageNotReadableException e) {
        return body(HttpStatus.BAD_REQUEST, new ApiError("request body is not valid JSON for this endpoint", 400, "body"));
    }

    @ExceptionHandler({ServiceUnavailableException.class, SessionExpiredException.class, TransientException.class})
    public ResponseEntity<ApiError> neo4jUnavailable(Neo4jException e) {
        log.warn("Neo4j unavailable: {}", e.getMessage());
        return body(HttpStatus.SERVICE_UNAVAILABLE,
                new ApiError("Neo4j is unavailable: " + e.getMessage(), 503));
    }

    @ExceptionHandler(Neo4jException.class)
    public ResponseEntity<ApiError> neo4jFailure(Neo4jException e) {
        log.error("Neo4j query failed", e);
        return body(HttpStatus.INTERNAL_SERVER_ERROR, new ApiError("Neo4j query failed: " + e.getMessage(), 500));
    }

    private static ResponseEntity<ApiError> body(HttpStatus status, ApiError error) {
        return ResponseEntity.status(status).body(error);
    }
}
