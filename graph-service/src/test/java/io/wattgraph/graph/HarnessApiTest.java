package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Base of the tests that call the service on a random port, reading the shared harness Neo4j ({@link TestNeo4j},
 * seeded with {@link GraphFixture}). A subclass may give its own {@code @SpringBootTest} (properties); subclasses
 * with the same annotations share one Spring context.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
abstract class HarnessApiTest {

    @DynamicPropertySource
    static void harnessNeo4j(DynamicPropertyRegistry registry) {
        registry.add("wattgraph.neo4j.uri", TestNeo4j::boltUri);
    }

    @Autowired
    protected TestRestTemplate rest;

    protected final ObjectMapper json = new ObjectMapper();

    /** GET {@code path} (URI template with {@code vars}), which must answer 200, as JSON. */
    protected JsonNode getOk(String path, Object... vars) throws Exception {
        ResponseEntity<String> r = rest.getForEntity(path, String.class, vars);
        assertThat(r.getStatusCode()).as(path + " " + r.getBody()).isEqualTo(HttpStatus.OK);
        return json.readTree(r.getBody());
    }
}
