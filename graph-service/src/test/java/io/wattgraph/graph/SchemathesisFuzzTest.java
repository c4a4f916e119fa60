package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Schemathesis (pinned in src/test/fuzz/schemathesis-requirements.txt, installed by src/test/fuzz/schemathesis.sh
 * into a cache venv) generates valid and invalid requests for every operation of the live service's OpenAPI
 * document. With an admin token: no answer is a 5xx, and every operation refuses the same request without the
 * token (its ignored_auth check). Without any token: every answer is a refusal carrying no data. Bounded by
 * examples per operation, a fixed seed and a process timeout.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "wattgraph.auth.enabled=true", "wattgraph.auth.read-tokens=fuzz-reader", "wattgraph.auth.admin-tokens=fuzz-admin"})
class SchemathesisFuzzTest extends HarnessApiTest {

    private static final Path SCRIPT = Path.of("src", "test", "fuzz", "schemathesis.sh");
    private static final Path REPORTS = Path.of("target", "schemathesis");

    @LocalServerPort
    private int port;

    @Test
    void withATokenNoServerErrorAndEveryOperationNeedsTheToken() throws Exception {
        Run run = schemathesis("admin", List.of("-H", "Authorization: Bearer fuzz-admin",
                "--checks", "not_a_server_error,ignored_auth"));
        assertThat(run.exit()).as(run.output()).isZero();
        assertThat(run.statuses()).as("requests sent").hasSizeGreaterThan(50).noneMatch(s -> s >= 500);
        System.out.printf("schemathesis with an admin token: %d requests, %d s%n", run.statuses().size(), run.seconds());
    }

    @Test
    void withoutATokenEveryAnswerIsARefusal() throws Exception {
        Run run = schemathesis("no-token", List.of("--checks", "not_a_server_error"));
        assertThat(run.statuses()).as("requests sent").hasSizeGreaterThan(50).allMatch(s -> s == 401 || s == 400);
        assertThat(run.bodies()).noneMatch(b -> b.contains("host-a") || b.contains("\"rows\""));
        System.out.printf("schemathesis without a token: %d requests, %d s%n", run.statuses().size(), run.seconds());
    }

    record Run(int exit, String output, List<Integer> statuses, List<String> bodies, long seconds) {
    }

    private Run schemathesis(String name, List<String> extra) throws Exception {
        Files.createDirectories(REPORTS);
        Path har = REPORTS.resolve(name + ".har").toAbsolutePath();
        Files.deleteIfExists(har);
        List<String> command = new ArrayList<>(List.of("bash", SCRIPT.toAbsolutePath().toString(),
                "http://127.0.0.1:" + port + "/v3/api-docs", "--url", "http://127.0.0.1:" + port,
                "--seed", "20261126", "--max-examples", "8", "--workers", "1", "--no-shrink",
                "--phases", "examples,coverage,fuzzing", "--suppress-health-check", "all",
                "--request-timeout", "30", "--generation-database", "none", "--no-color",
                "--report", "har", "--report-har-path", har.toString()));
        command.addAll(extra);
        Path log = REPORTS.resolve(name + ".log");
        long start = System.nanoTime();
        // Run in target/schemathesis: schemathesis keeps a cache in its working directory.
        Process process = new ProcessBuilder(command).directory(REPORTS.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        if (!process.waitFor(240, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError("schemathesis did not finish within 240 s; see " + log);
        }
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertThat(har).as("HAR report; output:\n" + output).exists();
        List<Integer> statuses = new ArrayList<>();
        List<String> bodies = new ArrayList<>();
        for (JsonNode entry : json.readTree(har.toFile()).at("/log/entries")) {
            statuses.add(entry.at("/response/status").asInt());
            bodies.add(entry.at("/response/content/text").asText(""));
        }
        return new Run(process.exitValue(), output, statuses, bodies, seconds);
    }
}
