package io.wattgraph.graph;

import com.fasterxml.jackson.annotation.JsonInclude;

/** The JSON error body of every API error: {@code {"error": "...", "status": N}}, plus the parameter for 400s. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ApiError(String error, int status, String parameter) {

    public ApiError(String error, int status) {
        this(error, status, null);
    }
}
