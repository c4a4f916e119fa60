package io.wattgraph.graph.security;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.wattgraph.graph.ApiError;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Guards {@code /api/**} with bearer tokens when {@code wattgraph.auth.enabled}: GET and HEAD need a read or
 * admin token, every other method an admin token. Health, Prometheus and the OpenAPI document stay open.
 * 401 (with {@code WWW-Authenticate: Bearer}) for a missing or unknown token, 403 for a read token on an
 * admin operation; both as the API's JSON error. Tokens are compared in constant time.
 */
@Component
public class BearerTokenFilter extends OncePerRequestFilter {

    private final AuthProperties auth;
    private final ObjectMapper json = new ObjectMapper();

    public BearerTokenFilter(AuthProperties auth) {
        this.auth = auth;
        if (auth.enabled() && auth.adminTokens().stream().allMatch(String::isBlank)
                && auth.readTokens().stream().allMatch(String::isBlank)) {
            throw new IllegalStateException("wattgraph.auth.enabled=true but no tokens are configured "
                    + "(wattgraph.auth.read-tokens / wattgraph.auth.admin-tokens)");
        }
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        String path = request.getRequestURI().substring(request.getContextPath().length());
        return !auth.enabled() || !path.startsWith("/api/");
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String header = request.getHeader("Authorization");
        String token = header != null && header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : null;
        boolean admin = token != null && matches(token, auth.adminTokens());
        boolean read = admin || (token != null && matches(token, auth.readTokens()));
        if (!read) {
            response.setHeader("WWW-Authenticate", "Bearer realm=\"wattgraph\"");
            write(response, 401, token == null ? "missing bearer token" : "invalid bearer token");
            return;
        }
        boolean readOnlyMethod = "GET".equals(request.getMethod()) || "HEAD".equals(request.getMethod());
        if (!readOnlyMethod && !admin) {
            write(response, 403, "this operation needs an admin token");
            return;
        }
        chain.doFilter(request, response);
    }

    private static boolean matches(String token, List<String> tokens) {
        byte[] given = token.getBytes(StandardCharsets.UTF_8);
        boolean found = false;
        for (String t : tokens) {
            if (!t.isBlank() && MessageDigest.isEqual(given, t.getBytes(StandardCharsets.UTF_8))) {
                found = true;
            }
        }
        return found;
    }

    private void write(HttpServletResponse response, int status, String message) throws IOException {
        response.setStatus(status);
        response.setContentType(MediaType.APPLICATION_JSON_VALUE);
        json.writeValue(response.getOutputStream(), new ApiError(message, status));
    }
}
