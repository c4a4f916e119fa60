package io.wattgraph.graph.history;

import io.wattgraph.graph.ApiError;
import io.wattgraph.graph.HostIdValidator;
import io.wattgraph.graph.InvalidParameterException;
import io.wattgraph.graph.RequestParams;
import io.wattgraph.graph.model.MetricHistory;
import io.wattgraph.graph.model.MetricHistoryReader;
import java.util.List;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /api/v1/history}: an entity's recent windows (CPU, power, request rate) as the stream job keeps
 * them on its node, with mean, p95 and peak: how loaded it was over the last hour, not just the last 10 s.
 */
@RestController
@RequestMapping("/api/v1")
public class HistoryController {

    private static final HostIdValidator NAMES = new HostIdValidator();

    /** The answer: the windows ending in [fromNs, toNs], oldest first, and each figure's summary over them. */
    public record EntityHistory(String level, String id, Long fromNs, Long toNs, List<MetricHistory.Window> windows,
                                MetricHistory.Summary cpuUsage, MetricHistory.Summary powerW,
                                MetricHistory.Summary requestRate) {
    }

    private final MetricHistoryReader reader;

    public HistoryController(MetricHistoryReader reader) {
        this.reader = reader;
    }

    @GetMapping("/history")
    public ResponseEntity<?> history(
            @RequestParam(name = "level", required = false) String level,
            @RequestParam(name = "id", required = false) String id,
            @RequestParam(name = "fromNs", required = false) String fromNs,
            @RequestParam(name = "toNs", required = false) String toNs) {
        String lvl = RequestParams.oneOf("level", level, "host", MetricHistoryReader.LEVELS.toArray(String[]::new));
        String entity = NAMES.validate("id", id);
        Long from = RequestParams.nonNegativeLong("fromNs", fromNs);
        Long to = RequestParams.nonNegativeLong("toNs", toNs);
        if (from != null && to != null && from > to) {
            throw new InvalidParameterException("fromNs", "must not be after toNs");
        }
        MetricHistory h = reader.read(lvl, List.of(entity)).get(entity);
        if (h == null) {
            return ResponseEntity.status(HttpStatus.NOT_FOUND)
                    .body(new ApiError("no " + lvl + " with id " + entity, 404, "id"));
        }
        MetricHistory range = h.between(from, to);
        return ResponseEntity.ok(new EntityHistory(lvl, entity, from, to, range.windows(), range.cpuUsage(),
                range.powerW(), range.requestRate()));
    }
}
