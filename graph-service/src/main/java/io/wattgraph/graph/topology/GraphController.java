package io.wattgraph.graph.topology;

import io.wattgraph.graph.HostIdValidator;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** {@code GET /api/v1/graph[?host=ID]}: the TALKS_TO graph, whole or limited to one host. */
@RestController
@RequestMapping("/api/v1")
public class GraphController {

    private final GraphRepository repository;
    private final GraphAssembler assembler;
    private final HostIdValidator hostIdValidator;

    public GraphController(GraphRepository repository, GraphAssembler assembler, HostIdValidator hostIdValidator) {
        this.repository = repository;
        this.assembler = assembler;
        this.hostIdValidator = hostIdValidator;
    }

    @GetMapping("/graph")
    public Graph graph(@RequestParam(name = "host", required = false) String host) {
        if (host == null) {
            return assembler.assemble(repository.allTalksTo());
        }
        // An unknown host is not an error: it simply has no edges (yet).
        return assembler.assemble(repository.talksToOnHost(hostIdValidator.validate("host", host)));
    }
}
