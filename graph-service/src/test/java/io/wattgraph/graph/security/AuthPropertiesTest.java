package io.wattgraph.graph.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Start-up refuses auth without tokens, or with a token a client could not send as a bearer token. */
class AuthPropertiesTest {

    @Test
    void enabledWithoutTokensOrWithUnsendableTokensFails() {
        assertThatThrownBy(() -> new AuthProperties(true, List.of(), List.of(" "), true))
                .hasMessageContaining("no tokens are configured");
        assertThatThrownBy(() -> new AuthProperties(true, List.of("has space"), List.of(), true))
                .hasMessageContaining("cannot be sent as a bearer token");
        assertThatThrownBy(() -> new AuthProperties(true, List.of(), List.of("a,b:c"), true))
                .hasMessageContaining("cannot be sent as a bearer token");
    }

    @Test
    void tokensAreTrimmedAndDisabledNeedsNone() {
        assertThat(new AuthProperties(true, List.of(" r-1 ", ""), List.of("YWRtaW4="), true).readTokens())
                .containsExactly("r-1");
        assertThat(new AuthProperties(false, List.of(), List.of(), true).enabled()).isFalse();
    }
}
