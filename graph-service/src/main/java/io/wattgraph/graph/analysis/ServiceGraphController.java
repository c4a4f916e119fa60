package io.wattgraph.graph.analysis;

import io.wattgraph.graph.RequestParams;
import io.wattgraph.graph.model.GraphFilter;
import io.wattgraph.graph.model.ServiceGraph;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The aggregated graph ({@code /api/v1/service-graph}) as JSON or Graphviz DOT, and the traffic projections
 * ({@code /api/v1/projections/host}, {@code /api/v1/projections/process-type}). All take the filters
 * {@code host}, {@code namespace}, {@code fromNs}, {@code toNs}.
 */
@RestController
@RequestMapping("/api/v1")
public class ServiceGraphController {

    static final MediaType GRAPHVIZ = MediaType.parseMediaType("text/vnd.graphviz;charset=UTF-8");

    private final ServiceGraphService service;

    public ServiceGraphController(ServiceGraphService service) {
        this.service = service;
    }

    @GetMapping("/service-graph")
    public ResponseEntity<?> serviceGraph(
            @RequestParam(name = "level", required = false) String level,
            @RequestParam(name = "host", required = false) String host,
            @RequestParam(name = "namespace", required = false) String namespace,
            @RequestParam(name = "fromNs", required = false) String fromNs,
            @RequestParam(name = "toNs", required = false) String toNs,
            @RequestParam(name = "format", required = false) String format,
            @RequestParam(name = "minEdgeFraction", required = false) String minEdgeFraction) {
        String fmt = RequestParams.oneOf("format", format, "json", "json", "dot");
        double fraction = RequestParams.fraction("minEdgeFraction", minEdgeFraction);
        GraphFilter filter = GraphParams.filter(host, namespace, fromNs, toNs);
        ServiceGraph graph = DotExporter.heavyEdges(service.graph(filter, GraphParams.level(level, Level.PROCESS)),
                fraction);
        if (fmt.equals("dot")) {
            return ResponseEntity.ok().contentType(GRAPHVIZ).body(service.timed("dot", () -> DotExporter.toDot(graph)));
        }
        return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(graph);
    }

    @GetMapping("/projections/host")
    public TrafficMatrix hostProjection(
            @RequestParam(name = "host", required = false) String host,
            @RequestParam(name = "namespace", required = false) String namespace,
            @RequestParam(name = "fromNs", required = false) String fromNs,
            @RequestParam(name = "toNs", required = false) String toNs) {
        ServiceGraph graph = service.graph(GraphParams.filter(host, namespace, fromNs, toNs), Level.PROCESS);
        return service.timed("projection_host", () -> TrafficMatrix.byHost(graph));
    }

    @GetMapping("/projections/process-type")
    public TrafficMatrix processTypeProjection(
            @RequestParam(name = "host", required = false) String host,
            @RequestParam(name = "namespace", required = false) String namespace,
            @RequestParam(name = "fromNs", required = false) String fromNs,
            @RequestParam(name = "toNs", required = false) String toNs) {
        ServiceGraph graph = service.graph(GraphParams.filter(host, namespace, fromNs, toNs), Level.PROCESS);
        return service.timed("projection_process_type", () -> TrafficMatrix.byProcessType(graph));
    }
}
