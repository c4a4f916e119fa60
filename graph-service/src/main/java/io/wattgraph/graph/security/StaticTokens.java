package io.wattgraph.graph.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Map;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.oauth2.core.OAuth2AuthenticatedPrincipal;
import org.springframework.security.oauth2.server.resource.introspection.BadOpaqueTokenException;
import org.springframework.security.oauth2.server.resource.introspection.OAuth2IntrospectionAuthenticatedPrincipal;
import org.springframework.security.oauth2.server.resource.introspection.OpaqueTokenIntrospector;

/**
 * Resolves a bearer token against the configured read and admin tokens. Tokens are compared as SHA-256
 * digests with {@link MessageDigest#isEqual}, every configured token each time, so neither the time taken
 * nor an early exit tells how much of a guess was right or how long the real tokens are.
 */
final class StaticTokens implements OpaqueTokenIntrospector {

    static final String READ = "ROLE_READ";
    static final String ADMIN = "ROLE_ADMIN";

    private final List<byte[]> read;
    private final List<byte[]> admin;

    StaticTokens(AuthProperties auth) {
        this.read = auth.readTokens().stream().map(StaticTokens::digest).toList();
        this.admin = auth.adminTokens().stream().map(StaticTokens::digest).toList();
    }

    @Override
    public OAuth2AuthenticatedPrincipal introspect(String token) {
        byte[] given = digest(token);
        boolean isAdmin = matches(given, admin);
        boolean isRead = matches(given, read);
        if (!isAdmin && !isRead) {
            throw new BadOpaqueTokenException("invalid bearer token");
        }
        String role = isAdmin ? ADMIN : READ;
        return new OAuth2IntrospectionAuthenticatedPrincipal(isAdmin ? "admin-token" : "read-token",
                Map.of("active", true), AuthorityUtils.createAuthorityList(role));
    }

    private static boolean matches(byte[] given, List<byte[]> tokens) {
        boolean found = false;
        for (byte[] t : tokens) {
            found |= MessageDigest.isEqual(given, t);
        }
        return found;
    }

    private static byte[] digest(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
