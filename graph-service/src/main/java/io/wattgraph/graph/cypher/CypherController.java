package io.wattgraph.graph.cypher;

import io.wattgraph.graph.ApiError;
import io.wattgraph.graph.analysis.ServiceGraphService;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /api/v1/cypher}: a read-only query for power users (see {@link ReadOnlyCypher}). */
@RestController
@RequestMapping("/api/v1")
public class CypherController {

    private final ReadOnlyCypher cypher;
    private final ServiceGraphService timing;

    public CypherController(ReadOnlyCypher cypher, ServiceGraphService timing) {
        this.cypher = cypher;
        this.timing = timing;
    }

    @PostMapping("/cypher")
    public CypherResult run(@RequestBody(required = false) CypherRequest request) {
        return timing.timed("cypher", () -> cypher.run(request));
    }

    @ExceptionHandler(CypherRejectedException.class)
    public ResponseEntity<ApiError> rejected(CypherRejectedException e) {
        ResponseEntity.BodyBuilder answer = ResponseEntity.status(e.status());
        if (e.status() == org.springframework.http.HttpStatus.TOO_MANY_REQUESTS) {
            answer.header("Retry-After", "1");
        }
        return answer.body(new ApiError(e.getMessage(), e.status().value()));
    }
}
