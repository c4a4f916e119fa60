package io.wattgraph.graph.analysis;

import io.wattgraph.graph.RequestParams;
import io.wattgraph.graph.model.Percentile;
import io.wattgraph.graph.model.ServiceGraph;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** Operational analysis (PowerThesis Eq. 3.3-3.5) and critical path, at a chosen level (default pod). */
@RestController
@RequestMapping("/api/v1/analysis")
public class AnalysisController {

    private final ServiceGraphService service;

    public AnalysisController(ServiceGraphService service) {
        this.service = service;
    }

    @GetMapping("/operational")
    public OperationalAnalysis operational(
            @RequestParam(name = "level", required = false) String level,
            @RequestParam(name = "host", required = false) String host,
            @RequestParam(name = "namespace", required = false) String namespace,
            @RequestParam(name = "fromNs", required = false) String fromNs,
            @RequestParam(name = "toNs", required = false) String toNs,
            @RequestParam(name = "arrivalRate", required = false) String arrivalRate) {
        Double lambda = RequestParams.positiveDouble("arrivalRate", arrivalRate);
        ServiceGraph graph = service.graph(GraphParams.filter(host, namespace, fromNs, toNs),
                GraphParams.level(level, Level.POD));
        return service.timed("operational", () -> OperationalAnalysis.of(graph, lambda));
    }

    @GetMapping("/critical-path")
    public CriticalPath criticalPath(
            @RequestParam(name = "level", required = false) String level,
            @RequestParam(name = "host", required = false) String host,
            @RequestParam(name = "namespace", required = false) String namespace,
            @RequestParam(name = "fromNs", required = false) String fromNs,
            @RequestParam(name = "toNs", required = false) String toNs,
            @RequestParam(name = "percentile", required = false) String percentile,
            @RequestParam(name = "mode", required = false) String mode) {
        Percentile p = GraphParams.percentile(percentile, Percentile.P99);
        String m = RequestParams.oneOf("mode", mode, "widest", "widest", "longest");
        ServiceGraph graph = service.graph(GraphParams.filter(host, namespace, fromNs, toNs),
                GraphParams.level(level, Level.POD));
        return service.timed("critical_path", () -> CriticalPath.of(graph, p, m));
    }
}
