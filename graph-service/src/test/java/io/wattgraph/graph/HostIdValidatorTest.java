package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Boundaries of the host id check (no Spring, no Neo4j needed). */
class HostIdValidatorTest {

    private final HostIdValidator validator = new HostIdValidator();

    @Test
    void acceptsOrdinaryIdsUpTo253Characters() {
        assertThat(validator.validate("host", "node-1.example.com")).isEqualTo("node-1.example.com");
        assertThat(validator.validate("host", "h".repeat(253))).hasSize(253);
        assertThat(validator.validate("host", "host-a' OR 1=1 //")).isEqualTo("host-a' OR 1=1 //"); // harmless: a parameter
    }

    @Test
    void rejectsBlankTooLongAndControlCharacters() {
        for (String bad : new String[] {null, "", " \t", "h".repeat(254), "a\u0000b", "a\rb", "a\u007fb"}) {
            assertThatThrownBy(() -> validator.validate("host", bad))
                    .isInstanceOf(InvalidParameterException.class)
                    .hasMessageContaining("'host'")
                    .satisfies(e -> assertThat(((InvalidParameterException) e).parameter()).isEqualTo("host"));
        }
    }
}
