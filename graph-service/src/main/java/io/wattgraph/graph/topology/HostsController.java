package io.wattgraph.graph.topology;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code GET /api/v1/hosts}: the monitored hosts with their process and container counts. */
@RestController
@RequestMapping("/api/v1")
public class HostsController {

    private final GraphRepository repository;

    public HostsController(GraphRepository repository) {
        this.repository = repository;
    }

    @GetMapping("/hosts")
    public HostList hosts() {
        return new HostList(repository.hosts());
    }
}
