package io.wattgraph.graph.security;

import java.util.List;
import java.util.regex.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Bearer-token authentication ({@code wattgraph.auth.*}). Tokens come from configuration, e.g. the
 * environment variables {@code WATTGRAPH_AUTH_READ_TOKENS} and {@code WATTGRAPH_AUTH_ADMIN_TOKENS}
 * (comma-separated) filled from a Kubernetes Secret. Start-up fails when auth is enabled without any token,
 * or with a token a client could not send in an {@code Authorization: Bearer} header (RFC 6750 token68).
 *
 * @param enabled when false (the default, for the local stack) every request acts as an admin
 * @param readTokens tokens allowed to GET and HEAD
 * @param adminTokens tokens allowed everything, including POST/DELETE (Cypher, placement, power budgets)
 * @param prometheusOpen whether {@code /actuator/prometheus} answers without a token (in-cluster scraping)
 */
@ConfigurationProperties("wattgraph.auth")
public record AuthProperties(@DefaultValue("false") boolean enabled, @DefaultValue List<String> readTokens,
                             @DefaultValue List<String> adminTokens, @DefaultValue("false") boolean prometheusOpen) {

    private static final Pattern TOKEN68 = Pattern.compile("[A-Za-z0-9._~+/-]+=*");

    public AuthProperties {
        readTokens = readTokens.stream().map(String::trim).filter(t -> !t.isEmpty()).toList();
        adminTokens = adminTokens.stream().map(String::trim).filter(t -> !t.isEmpty()).toList();
        if (enabled && readTokens.isEmpty() && adminTokens.isEmpty()) {
            throw new IllegalStateException("wattgraph.auth.enabled=true but no tokens are configured "
                    + "(wattgraph.auth.read-tokens / wattgraph.auth.admin-tokens)");
        }
        for (String t : concat(readTokens, adminTokens)) {
            if (!TOKEN68.matcher(t).matches()) {
                throw new IllegalStateException("a token in wattgraph.auth.read-tokens/admin-tokens has characters "
                        + "outside A-Z a-z 0-9 - . _ ~ + / (and trailing =), so it cannot be sent as a bearer token");
            }
        }
    }

    private static List<String> concat(List<String> a, List<String> b) {
        return java.util.stream.Stream.concat(a.stream(), b.stream()).toList();
    }
}
