package io.wattgraph.graph.security;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.wattgraph.graph.ApiError;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.security.authentication.InsufficientAuthenticationException;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;
import org.springframework.security.config.annotation.web.configuration.WebSecurityCustomizer;
import org.springframework.security.config.annotation.web.configurers.AbstractHttpConfigurer;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.AuthenticationException;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.security.oauth2.server.resource.web.BearerTokenAuthenticationEntryPoint;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.access.intercept.AuthorizationFilter;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Who may call what, decided in Spring Security's filter chain: its firewall rejects URLs that are not
 * normalised ({@code ;params}, encoded slashes or dots, {@code //}, {@code ..}) before anything else, and its
 * matchers see the path the dispatcher routes. Deny by default: only {@link #openPaths} answer without a
 * token (GET/HEAD); any other GET/HEAD needs a read or admin token, any other method an admin token.
 * With {@code wattgraph.auth.enabled=false} (the local stack, on 127.0.0.1) every request acts as an admin.
 */
@Configuration(proxyBeanMethods = false)
@EnableWebSecurity
public class SecurityConfiguration {

    /**
     * Everything that answers without a token, in one place. Each entry serves no graph data:
     * health (kubelet probes carry no token; details only with a token), the OpenAPI document (the
     * API's shape, public in the source anyway; clients and fuzzers read it before they have a token), the
     * service-map page and its assets (its scripts under /js/, the libraries under /vendor/: they hold no data and
     * the page asks for the token). Prometheus metrics only with {@code wattgraph.auth.prometheus-open=true}: with
     * the metrics export they name workloads, hosts and who talks to whom, which the API gives only to token
     * holders; Prometheus scrapes with a read token.
     */
    public static List<String> openPaths(AuthProperties auth) {
        List<String> open = new ArrayList<>(List.of("/actuator/health", "/actuator/health/liveness",
                "/actuator/health/readiness", "/v3/api-docs", "/", "/index.html", "/app.js", "/app.css", "/js/*",
                "/vendor/*"));
        if (auth.prometheusOpen()) {
            open.add("/actuator/prometheus");
        }
        return List.copyOf(open);
    }

    @Bean
    SecurityFilterChain securityFilterChain(HttpSecurity http, AuthProperties auth, ObjectMapper json) throws Exception {
        BearerTokenAuthenticationEntryPoint bearer = new BearerTokenAuthenticationEntryPoint();
        bearer.setRealmName("wattgraph");
        http.csrf(AbstractHttpConfigurer::disable) // no cookies or sessions: a cross-site request carries no token
                .sessionManagement(s -> s.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .requestCache(AbstractHttpConfigurer::disable)
                .formLogin(AbstractHttpConfigurer::disable)
                .httpBasic(AbstractHttpConfigurer::disable)
                .logout(AbstractHttpConfigurer::disable)
                .exceptionHandling(e -> e
                        .authenticationEntryPoint((request, response, failure) -> {
                            bearer.commence(request, response, failure);
                            write(json, response, 401, failure instanceof InsufficientAuthenticationException
                                    ? "missing bearer token" : "invalid bearer token");
                        })
                        .accessDeniedHandler((request, response, denied) ->
                                write(json, response, 403, "this operation needs an admin token")))
                .authorizeHttpRequests(a -> {
                    // An error dispatch renders the error of a request that already went through this chain.
                    a.dispatcherTypeMatchers(DispatcherType.ERROR).permitAll();
                    for (String path : openPaths(auth)) {
                        a.requestMatchers(HttpMethod.GET, path).permitAll();
                        a.requestMatchers(HttpMethod.HEAD, path).permitAll();
                    }
                    a.requestMatchers(HttpMethod.GET).hasAnyAuthority(StaticTokens.READ, StaticTokens.ADMIN);
                    a.requestMatchers(HttpMethod.HEAD).hasAnyAuthority(StaticTokens.READ, StaticTokens.ADMIN);
                    a.anyRequest().hasAuthority(StaticTokens.ADMIN);
                });
        if (auth.enabled()) {
            StaticTokens tokens = new StaticTokens(auth);
            http.oauth2ResourceServer(o -> o.opaqueToken(t -> t.introspector(tokens))
                    .authenticationEntryPoint((request, response, failure) -> {
                        bearer.commence(request, response, failure);
                        write(json, response, 401, reason(failure));
                    }));
        } else {
            http.addFilterBefore(new LocalAdmin(), AuthorizationFilter.class);
        }
        return http.build();
    }

    /** Firewall rejections as the API's JSON error, naming what was wrong with the URL. */
    @Bean
    WebSecurityCustomizer requestRejected(ObjectMapper json) {
        return web -> web.requestRejectedHandler((request, response, rejected) -> write(json, response, 400,
                "request rejected: " + rejected.getMessage().replace("The request was rejected because ", "")));
    }

    private static String reason(AuthenticationException failure) {
        return failure instanceof InsufficientAuthenticationException ? "missing bearer token"
                : failure.getMessage() != null && failure.getMessage().contains("malformed")
                ? "malformed bearer token" : "invalid bearer token";
    }

    private static void write(ObjectMapper json, HttpServletResponse response, int status, String message)
            throws IOException {
        response.setStatus(status);
        response.setContentType(MediaType.APPLICATION_JSON_VALUE);
        json.writeValue(response.getOutputStream(), new ApiError(message, status));
    }

    /** Auth disabled: every request is the local administrator (so health details show as with a token). */
    private static final class LocalAdmin extends OncePerRequestFilter {
        @Override
        protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
                throws ServletException, IOException {
            if (SecurityContextHolder.getContext().getAuthentication() == null
                    || !SecurityContextHolder.getContext().getAuthentication().isAuthenticated()
                    || "anonymousUser".equals(SecurityContextHolder.getContext().getAuthentication().getPrincipal())) {
                SecurityContextHolder.getContext().setAuthentication(UsernamePasswordAuthenticationToken.authenticated(
                        "local (auth disabled)", null, AuthorityUtils.createAuthorityList(StaticTokens.ADMIN)));
            }
            chain.doFilter(request, response);
        }
    }
}
