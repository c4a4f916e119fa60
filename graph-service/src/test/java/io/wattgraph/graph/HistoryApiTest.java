package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

/**
 * {@code GET /api/v1/history} and placement's {@code cpuBasis} over the shared harness Neo4j ({@link GraphFixture}:
 * ctr-1 with four windows peaking at 6 cores and 3 GB, host-a with two).
 */
class HistoryApiTest extends HarnessApiTest {

    private JsonNode get(String query) throws Exception {
        return getOk("/api/v1/history" + query);
    }

    private static List<Long> ends(JsonNode h) {
        List<Long> out = new ArrayList<>();
        h.get("windows").forEach(w -> out.add(w.get("windowEndNs").asLong()));
        return out;
    }

    @Test
    void aContainersWindowsAndTheirSummary() throws Exception {
        JsonNode h = get("?level=container&id=ctr-1");
        assertThat(h.get("level").asText()).isEqualTo("container");
        assertThat(h.get("id").asText()).isEqualTo("ctr-1");
        assertThat(ends(h)).containsExactly(100L, 110L, 120L, 130L);
        JsonNode w2 = h.at("/windows/2");
        assertThat(w2.get("revision").asLong()).isEqualTo(1);
        assertThat(w2.get("cpuUsage").asDouble()).isEqualTo(1.0);
        assertThat(w2.get("powerW").asDouble()).isEqualTo(4.0);
        assertThat(w2.get("requestRate").asDouble()).isEqualTo(50.0);
        // NaN on the node (unknown) is null here, and left out of the summaries.
        assertThat(h.at("/windows/3/powerW").isNull()).isTrue();
        assertThat(h.at("/windows/0/requestRate").isNull()).isTrue();
        assertThat(h.at("/cpuUsage/windows").asInt()).isEqualTo(4);
        assertThat(h.at("/cpuUsage/max").asDouble()).isEqualTo(6.0);
        assertThat(h.at("/cpuUsage/p95").asDouble()).isEqualTo(6.0);
        assertThat(h.at("/cpuUsage/mean").asDouble()).isEqualTo(2.0);
        assertThat(h.at("/powerW/windows").asInt()).isEqualTo(3);
        assertThat(h.at("/powerW/mean").asDouble()).isEqualTo(16.0 / 3);
        assertThat(h.at("/requestRate/max").asDouble()).isEqualTo(50.0);
    }

    @Test
    void aRangeOfWindowsAndTheDefaultLevelHost() throws Exception {
        JsonNode h = get("?level=container&id=ctr-1&fromNs=110&toNs=120");
        assertThat(ends(h)).containsExactly(110L, 120L);
        assertThat(h.get("fromNs").asLong()).isEqualTo(110);
        assertThat(h.at("/cpuUsage/max").asDouble()).isEqualTo(6.0);
        assertThat(ends(get("?level=container&id=ctr-1&fromNs=125"))).containsExactly(130L);
        JsonNode none = get("?level=container&id=ctr-1&toNs=50");
        assertThat(ends(none)).isEmpty();
        assertThat(none.at("/cpuUsage/windows").asInt()).isZero();
        assertThat(none.at("/cpuUsage/max").isNull()).isTrue();

        JsonNode host = get("?id=host-a");
        assertThat(host.get("level").asText()).isEqualTo("host");
        assertThat(ends(host)).containsExactly(120L, 130L);
        assertThat(host.at("/powerW/max").asDouble()).isEqualTo(35.0);
        // A node the job has not given a history yet: no windows.
        assertThat(ends(get("?level=host&id=host-b"))).isEmpty();
    }

    @Test
    void badParametersAreNamedAndAnUnknownEntityIs404() throws Exception {
        for (String[] c : new String[][] {{"?level=pod&id=x", "level"}, {"?level=host", "id"}, {"?id=", "id"},
                {"?id=host-a&fromNs=-1", "fromNs"}, {"?id=host-a&toNs=soon", "toNs"},
                {"?id=host-a&fromNs=20&toNs=10", "fromNs"}}) {
            ResponseEntity<String> r = rest.getForEntity("/api/v1/history" + c[0], String.class);
            assertThat(r.getStatusCode()).as(c[0]).isEqualTo(HttpStatus.BAD_REQUEST);
            JsonNode e = json.readTree(r.getBody());
            assertThat(e.get("parameter").asText()).as(c[0]).isEqualTo(c[1]);
            assertThat(e.get("status").asInt()).isEqualTo(400);
        }
        ResponseEntity<String> missing = rest.getForEntity("/api/v1/history?level=container&id=nope", String.class);
        assertThat(missing.getStatusCode()).isEqualTo(HttpStatus.NOT_FOUND);
        assertThat(json.readTree(missing.getBody()).get("error").asText()).isEqualTo("no container with id nope");
    }

    private JsonNode place(Map<String, Object> body) throws Exception {
        ResponseEntity<String> r = rest.postForEntity("/api/v1/placement", body, String.class);
        assertThat(r.getStatusCode()).as(r.getBody()).isEqualTo(HttpStatus.OK);
        return json.readTree(r.getBody());
    }

    private static double cpuLoad(JsonNode placement) {
        return load(placement, "cpu");
    }

    private static double load(JsonNode placement, String resource) {
        double sum = 0;
        for (JsonNode l : placement.get("loads")) {
            sum += l.get(resource).asDouble();
        }
        return sum;
    }

    @Test
    void placementOnPeakCpuMovesWhatOutgrewItsHost() throws Exception {
        // Latest (default): ctr-1 at 0.5 cores fits host-a (4 cores) where it is.
        JsonNode latest = place(Map.of("method", "exact"));
        assertThat(cpuLoad(latest)).isEqualTo(0.5);
        assertThat(load(latest, "memory")).as("ctr-1 has no memoryBytes").isZero();
        assertThat(latest.get("feasible").asBoolean()).isTrue();
        // Peak: ctr-1 needed 6 cores in one window; only host-b (8 cores) holds it, and its peers follow it there.
        JsonNode peak = place(Map.of("method", "exact", "cpuBasis", "peak"));
        assertThat(cpuLoad(peak)).isEqualTo(6.0);
        // Memory over the kept cgroup windows: ctr-1's highest (3 GB; the NaN window unknown).
        assertThat(load(peak, "memory")).isEqualTo(3.0e9);
        assertThat(peak.at("/assignment/container:ctr-1").asText()).isEqualTo("host-b");
        assertThat(peak.get("moves").toString()).contains("container:ctr-1");
        assertThat(peak.get("feasible").asBoolean()).isTrue();
        // Host level: host-a's own history (peak 2.5), host-b has none and keeps its latest (none: 0).
        JsonNode hosts = place(Map.of("method", "exact", "level", "host", "cpuBasis", "p95"));
        assertThat(cpuLoad(hosts)).isEqualTo(2.5);
        assertThat(load(hosts, "memory")).as("host-a's containers' peak").isEqualTo(3.0e9);

        ResponseEntity<String> bad = rest.postForEntity("/api/v1/placement", Map.of("cpuBasis", "mean"), String.class);
        assertThat(bad.getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
        assertThat(json.readTree(bad.getBody()).get("parameter").asText()).isEqualTo("cpuBasis");
    }
}
