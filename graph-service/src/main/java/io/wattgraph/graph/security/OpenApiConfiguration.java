package io.wattgraph.graph.security;

import io.swagger.v3.oas.annotations.OpenAPIDefinition;
import io.swagger.v3.oas.annotations.enums.SecuritySchemeType;
import io.swagger.v3.oas.annotations.info.Info;
import io.swagger.v3.oas.annotations.security.SecurityRequirement;
import io.swagger.v3.oas.annotations.security.SecurityScheme;
import org.springframework.context.annotation.Configuration;

/** The OpenAPI document served at {@code /v3/api-docs} (springdoc), declaring the bearer-token scheme. */
@Configuration(proxyBeanMethods = false)
@OpenAPIDefinition(
        info = @Info(title = "Wattgraph graph service", version = "v1",
                description = "Service graph, traffic projections, operational analysis, critical path, "
                        + "read-only Cypher, placement and power budgets over the Neo4j graph. Answers computed "
                        + "from the graph reuse a graph read at most wattgraph.graph.cache-ttl ago (default 5 s, "
                        + "0 = off); the response header X-Wattgraph-Graph-Age-Ms gives its age in ms."),
        security = @SecurityRequirement(name = "bearer"))
@SecurityScheme(name = "bearer", type = SecuritySchemeType.HTTP, scheme = "bearer",
        description = "Read tokens for GET, admin tokens for POST (wattgraph.auth.*); off when auth is disabled.")
public class OpenApiConfiguration {
}
