package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.http.ResponseEntity;

/**
 * The Cypher endpoint decides from Neo4j's plan, not the query text: what reads outside the graph, writes,
 * switches database or administers is refused however it is spelled, every read of the graph passes, and
 * what would exhaust the service is stopped with an error naming the limit. After each test the service is
 * still healthy and answers a normal query, and the plugin stand-ins were never called.
 */
@AutoConfigureObservability
class CypherGuardTest extends HarnessApiTest {

    private ResponseEntity<String> post(String query, Long timeoutMs) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("query", query);
        body.put("timeoutMs", timeoutMs);
        return rest.postForEntity("/api/v1/cypher", body, String.class);
    }

    private JsonNode body(ResponseEntity<String> r) throws Exception {
        return json.readTree(r.getBody());
    }

    /** Every query answered one of the statuses, and none with rows. */
    private void expectEach(Set<Integer> statuses, List<String> queries) {
        SoftAssertions soft = new SoftAssertions();
        for (String q : queries) {
            ResponseEntity<String> r = post(q, null);
            soft.assertThat(r.getStatusCode().value()).as(q + " -> " + r.getBody()).isIn(statuses);
            soft.assertThat(r.getBody()).as(q).doesNotContain("\"rows\"");
        }
        soft.assertAll();
    }

    @AfterEach
    void serviceStillWorksAndNothingOutsideRan() throws Exception {
        assertThat(body(rest.getForEntity("/actuator/health", String.class)).get("status").asText()).isEqualTo("UP");
        ResponseEntity<String> normal = post("MATCH (h:Host) RETURN count(h) AS n", null);
        assertThat(normal.getStatusCode().value()).as(normal.getBody()).isEqualTo(200);
        assertThat(body(normal).at("/rows/0/0").asInt()).isEqualTo(2);
        assertThat(PluginStandIns.CALLS.get()).as("plugin code run through the endpoint").isZero();
    }

    @Test
    void theReportedFileReadIsRefused() throws Exception {
        ResponseEntity<String> csv = post("LOAD/**/CSV FROM 'file:///etc/hostname' AS l RETURN l", null);
        assertThat(csv.getStatusCode().value()).as(csv.getBody()).isEqualTo(403);
        assertThat(body(csv).get("error").asText()).contains("LoadCSV");
    }

    @Test
    void theReportedHeapExhaustionIsStopped() throws Exception {
        ResponseEntity<String> heap = post("UNWIND range(1,20000) AS x RETURN range(1,100000) AS r", null);
        assertThat(heap.getStatusCode().value()).as(heap.getBody()).isEqualTo(200);
        JsonNode cut = body(heap);
        assertThat(cut.get("truncated").asBoolean()).isTrue();
        assertThat(cut.get("limit").asText()).isEqualTo("maxResultBytes");
        assertThat(cut.get("rowCount").asInt()).isBetween(1, 100);
        assertThat(cut.at("/rows/0/0")).hasSize(100_000);

        ResponseEntity<String> oneHugeRow = post("RETURN range(1, 2000000) AS r", null);
        assertThat(oneHugeRow.getStatusCode().value()).as(oneHugeRow.getBody()).isEqualTo(413);
        assertThat(body(oneHugeRow).get("error").asText()).contains("wattgraph.cypher.max-result-bytes");
    }

    @Test
    void oneHugeValueIsCutOnTheWireBeforeTheDriverDecodesIt() throws Exception {
        // 100 million integers: ~0.5 GB from Neo4j, ~2.7 GB once decoded by the driver (the test JVM has 2 GB).
        ResponseEntity<String> r = post("RETURN range(1, 100000000) AS r", 60_000L);
        assertThat(r.getStatusCode().value()).as(r.getBody()).isEqualTo(413);
        assertThat(body(r).get("error").asText()).contains("Neo4j sent more than")
                .contains("wattgraph.cypher.max-result-bytes");
    }

    @Test
    void readingOutsideTheGraphIsRefusedHoweverSpelled() throws Exception {
        expectEach(Set.of(403), List.of(
                "LOAD CSV FROM 'file:///etc/hostname' AS l RETURN l",
                "load csv from 'file:///etc/hostname' as l return l",
                "LOAD // comment\n CSV FROM 'file:///etc/hostname' AS l RETURN l",
                "LOAD\tCSV WITH HEADERS FROM 'file:///etc/hostn\\u0061me' AS l RETURN l",
                "LOAD CSV FROM 'http://127.0.0.1:9/x.csv' AS l RETURN l",
                "WITH 'fi' + 'le:///etc/hostname' AS u LOAD CSV FROM u AS l RETURN l",
                "CALL { LOAD CSV FROM 'file:///etc/hostname' AS l RETURN l } RETURN l",
                "MATCH (h:Host) CALL { WITH h LOAD CSV FROM 'file:///etc/hostname' AS l RETURN l } RETURN l",
                "RETURN wattgraph.plugin.readFile('/etc/hostname') AS f",
                "RETURN `wattgraph`.`plugin`.readFile('/etc/hostname') AS f",
                "RETURN wattgraph /**/ . plugin . readFile ('/etc/hostname') AS f",
                "MATCH (h:Host) WHERE wattgraph.plugin.readFile('/etc/hostname') <> '' RETURN h",
                "MATCH (h:Host) RETURN h ORDER BY wattgraph.plugin.readFile('/etc/hostname')",
                "MATCH (p:Process {id: wattgraph.plugin.readFile('/etc/hostname')}) RETURN p",
                "MATCH (c:Container) WHERE c.id STARTS WITH wattgraph.plugin.readFile('/etc/hostname') RETURN c",
                "RETURN [x IN range(1, 2) | wattgraph.plugin.readFile('/etc/hostname')] AS l",
                "MATCH (h:Host) WHERE EXISTS { MATCH (h) WHERE wattgraph.plugin.readFile('/etc/hostname') <> '' } RETURN h",
                "CALL { RETURN wattgraph.plugin.readFile('/etc/hostname') AS f } RETURN f",
                "CALL wattgraph.plugin.readLines('/etc/hostname')",
                "CALL `wattgraph`.`plugin`.`readLines`('/etc/hostname') YIELD line RETURN line",
                "CALL { CALL wattgraph.plugin.readLines('/etc/hostname') YIELD line RETURN line } RETURN line",
                "CALL dbms.components()",
                "CALL dbms.listConfig()",
                "CALL db.info()",
                "CALL db.ping()",
                "CALL db.schema.visualization()",
                "RETURN file() AS f",
                "SHOW SETTINGS",
                "SHOW TRANSACTIONS",
                "TERMINATE TRANSACTIONS 'neo4j-transaction-1'",
                "SHOW FUNCTIONS",
                "SHOW PROCEDURES",
                "SHOW INDEXES",
                "SHOW CONSTRAINTS"));
    }

    @Test
    void otherDatabasesAndAdministrationAreRefused() throws Exception {
        expectEach(Set.of(400, 403), List.of("USE system SHOW USERS", "USE system SHOW DATABASES", "SHOW DATABASES",
                "SHOW USERS", "USE system CALL dbms.components() YIELD name RETURN name", "USE nope MATCH (n) RETURN n",
                "CREATE USER evil SET PASSWORD 'evil-password'", "CREATE DATABASE evil", "STOP DATABASE neo4j"));
        ResponseEntity<String> same = post("USE neo4j MATCH (h:Host) RETURN count(h) AS n", null);
        assertThat(same.getStatusCode().value()).as(same.getBody()).isEqualTo(200);
    }

    @Test
    void writesAreRefusedHoweverHidden() throws Exception {
        expectEach(Set.of(400, 403), List.of(
                "CREATE (:Evil)",
                "create (:Evil)",
                "CR/**/EATE (:Evil)",
                "MERGE (e:Evil {id: 1}) RETURN e",
                "FOREACH (x IN [1] | CREATE (:Evil))",
                "MATCH (h:Host) FOREACH (x IN [1] | SET h.evil = true)",
                "MATCH (h:Host) CALL { WITH h CREATE (:Evil) } RETURN count(*)",
                "CALL { CREATE (e:Evil) RETURN e } RETURN e",
                "MATCH (h:Host) CALL { WITH h SET h.evil = 1 } IN TRANSACTIONS RETURN count(*)",
                "MATCH (h:Host) CALL { WITH h MATCH (h)-->(x) RETURN x } IN TRANSACTIONS RETURN x",
                "MATCH (h:Host) SET h.`evil` = 1 RETURN h",
                "MATCH (h:Host) REMOVE h:Host RETURN h",
                "MATCH (n:Evil) DELETE n",
                "MATCH (n) DETACH DELETE n",
                "LOAD CSV FROM 'file:///etc/hostname' AS l CREATE (:Evil {l: l})",
                "CREATE INDEX evil FOR (n:Host) ON (n.evil)",
                "DROP INDEX evil IF EXISTS",
                "CREATE CONSTRAINT evil FOR (n:Evil) REQUIRE n.id IS UNIQUE"));
        assertThat(body(post("MATCH (n:Evil) RETURN count(n) AS n", null)).at("/rows/0/0").asInt()).isZero();
        assertThat(body(post("MATCH (h:Host) WHERE h.evil IS NOT NULL RETURN count(h)", null)).at("/rows/0/0").asInt())
                .isZero();
    }

    @Test
    void readsOfTheGraphPassHoweverWritten() throws Exception {
        SoftAssertions soft = new SoftAssertions();
        for (String q : List.of(
                "MATCH (h:Host) RETURN h",
                "MATCH (p:Process)-[t:TALKS_TO]->(s) RETURN p.comm, t, s ORDER BY p.comm SKIP 0 LIMIT 5",
                "MATCH p = (a:Process)-[:TALKS_TO*1..3]->(b) RETURN p",
                "MATCH p = shortestPath((a:Host {id: 'host-a'})-[*]-(b:Host {id: 'host-b'})) RETURN p",
                "MATCH p = (a:Process)-[:TALKS_TO]->{1,3}(b) RETURN length(p)",
                "MATCH p = SHORTEST 1 (a:Process)-->+(b) RETURN length(p)",
                "MATCH (n) WHERE EXISTS { MATCH (n)-->() } RETURN n.id, COUNT { (n)-->() } AS out",
                "MATCH (n) RETURN n, COLLECT { MATCH (n)-->(m) RETURN m.id } AS ids",
                "MATCH (n) RETURN [(n)-->(m) | m.id] AS ids, labels(n), keys(n), properties(n), elementId(n)",
                "MATCH (n) WITH n.id AS id, count(*) AS c WHERE c > 0 RETURN DISTINCT id ORDER BY id",
                "MATCH (n) RETURN count(DISTINCT n), avg(n.cores), percentileCont(n.cores, 0.5), stDev(n.cores), "
                        + "collect(n.id)[0..2], min(n.id), max(n.id), sum(n.cores)",
                "OPTIONAL MATCH (n:Nope) RETURN n",
                "MATCH (h:Host) RETURN h.id AS id UNION MATCH (p:Process) RETURN p.hostId AS id",
                "MATCH (h:Host) CALL { WITH h MATCH (h)<-[:RUNS_ON]-(p) RETURN count(p) AS c } RETURN h.id, c",
                "UNWIND [1, 2, 3] AS x RETURN x, x * 2, toString(x), toUpper('a'), size('abc'), "
                        + "CASE WHEN x > 1 THEN 'big' ELSE 'small' END, coalesce(null, x), x IS :: INTEGER",
                "RETURN date.truncate('day', datetime()) AS d, duration.between(date(), date()) AS du, "
                        + "point.distance(point({x: 1, y: 1}), point({x: 2, y: 2})) AS p, "
                        + "all(v IN [1] WHERE v > 0) AS a, reduce(s = 0, v IN [1, 2] | s + v) AS r",
                "RETURN 'LOAD CSV FROM file:///etc/hostname' AS text, 'apoc.load.json(x)' AS t2, 'dbms.x()' AS t3",
                "WITH 1 AS `wattgraph.plugin.readFile(` RETURN `wattgraph.plugin.readFile(`",
                "MATCH (n) WHERE n.id STARTS WITH 'host' AND n.id =~ 'h.*' AND n.id IS NOT NULL RETURN n.id",
                "MATCH (n:Host|Process) RETURN count(n)",
                "CALL db.labels()",
                "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType",
                "CALL db.propertyKeys()",
                "MATCH (h:Host) USING SCAN h:Host RETURN h.id",
                "RETURN $p AS p",
                // Index seeks and scans (the ids' unique constraints): their details name the index as
                // c:Container(id), which is not a call.
                "MATCH (p:Process {id: 'p-1'}) RETURN p",
                "MATCH (c:Container) WHERE c.id IN ['ctr-1', 'x'] OPTIONAL MATCH (p:Process)-[:IN_CONTAINER]->(c) "
                        + "RETURN c.id, count(p)",
                "MATCH (e:External) WHERE e.id STARTS WITH '10.96.' RETURN e.id",
                "MATCH (h:Host) WHERE h.id IS NOT NULL RETURN h.id ORDER BY h.id",
                "MATCH (a:Host {id: 'host-a'}), (b:Host {id: 'host-b'}) RETURN a, b")) {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("query", q);
            body.put("parameters", Map.of("p", 1));
            ResponseEntity<String> r = rest.postForEntity("/api/v1/cypher", body, String.class);
            soft.assertThat(r.getStatusCode().value()).as(q + " -> " + r.getBody()).isEqualTo(200);
        }
        soft.assertAll();
    }

    @Test
    void neo4jsMemoryLimitIsNamed() throws Exception {
        ResponseEntity<String> r = post("UNWIND range(1, 40000000) AS x RETURN size(collect(x)) AS n", 60_000L);
        assertThat(r.getStatusCode().value()).as(r.getBody()).isEqualTo(413);
        assertThat(body(r).get("error").asText()).contains("db.memory.transaction.max");
    }
}
