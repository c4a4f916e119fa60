package io.wattgraph.graph.security;

import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Bearer-token authentication ({@code wattgraph.auth.*}). Tokens come from configuration, e.g. the
 * environment variables {@code WATTGRAPH_AUTH_READ_TOKENS} and {@code WATTGRAPH_AUTH_ADMIN_TOKENS}
 * (comma-separated) filled from a Kubernetes Secret.
 *
 * @param enabled when false (the default, for the local stack) every request is allowed
 * @param readTokens tokens allowed to GET the API
 * @param adminTokens tokens allowed everything, including POST (Cypher, placement, power budgets)
 */
@ConfigurationProperties("wattgraph.auth")
public record AuthProperties(@DefaultValue("false") boolean enabled, @DefaultValue List<String> readTokens,
                             @DefaultValue List<String> adminTokens) {
}
