package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;

/**
 * Runs the page's browser tests ({@code src/test/browser/*.test.mjs}: node's test runner driving Debian's
 * Chromium through playwright-core, which the Maven build installs from package-lock.json) against a service
 * the calling JUnit class started. Each named test of a file is run on its own, so each shows up in Surefire.
 */
final class BrowserScenarios {

    static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    static final Path SCRIPTS = Path.of("src", "test", "browser");
    static final Path SHOTS = Path.of("target", "screenshots");
    private static final Path PLAYWRIGHT = Path.of("node_modules", "playwright-core", "package.json");

    private BrowserScenarios() {
    }

    /**
     * Skips the calling test class without Chromium or Node.js, or fails it under {@code CI=true}; fails
     * whenever playwright-core is missing (the build's npm ci installs it).
     */
    static void requireBrowser() {
        String missing = !Files.isExecutable(CHROMIUM) ? CHROMIUM + " (Debian package 'chromium')"
                : !onPath("node") ? "node (Node.js)" : null;
        if (missing != null) {
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                fail(missing + " is missing: the browser tests need it (bin/wattgraph setup installs it)");
            }
            Assumptions.abort(missing + " not installed: browser test skipped");
        }
        assertThat(PLAYWRIGHT).as("playwright-core: the Maven build's npm ci installs graph-service/package.json")
                .exists();
    }

    private static boolean onPath(String command) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, command))) {
                return true;
            }
        }
        return false;
    }

    /** {@code s} as a JavaScript regular expression that matches it literally. */
    static String jsRegexQuote(String s) {
        return s.replaceAll("[.*+?^${}()|\\[\\]\\\\/]", "\\\\$0");
    }

    /**
     * One JUnit test per {@code test('NAME', ...)} of {@code file}, each running that browser test against
     * http://127.0.0.1:{@code port}, with {@code env} added to its environment.
     */
    static Stream<DynamicTest> each(String file, IntSupplier port, Map<String, String> env) throws IOException {
        Matcher m = Pattern.compile("(?m)^test\\('((?:[^'\\\\]|\\\\.)*)'")
                .matcher(Files.readString(SCRIPTS.resolve(file)));
        List<String> names = new ArrayList<>();
        while (m.find()) {
            names.add(m.group(1).replace("\\'", "'"));
        }
        assertThat(names).as("tests in " + file).isNotEmpty();
        return names.stream().map(name -> DynamicTest.dynamicTest(name, () -> run(file, name, port.getAsInt(), env)));
    }

    /** Runs test {@code name} of {@code file} against http://127.0.0.1:{@code port}; fails with its output. */
    static void run(String file, String name, int port) throws IOException, InterruptedException {
        run(file, name, port, Map.of());
    }

    /** As {@link #run(String, String, int)}, with more environment for the script. */
    static void run(String file, String name, int port, Map<String, String> env)
            throws IOException, InterruptedException {
        Files.createDirectories(SHOTS);
        Path log = Files.createTempFile("browser-test", ".log");
        List<String> cmd = List.of("node", "--test", "--test-reporter=spec",
                "--test-name-pattern=^" + jsRegexQuote(name) + "$", SCRIPTS.resolve(file).toString());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("WATTGRAPH_URL", "http://127.0.0.1:" + port);
        pb.environment().put("WATTGRAPH_SHOTS", SHOTS.toAbsolutePath().toString());
        pb.environment().put("WATTGRAPH_CHROMIUM", CHROMIUM.toString());
        pb.environment().putAll(env);
        Process p = pb.start();
        // A guard against a hung browser, not a performance assertion.
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly); // node's test child and its browser
            p.destroyForcibly().waitFor();
            fail(name + ": the browser test did not finish:\n" + Files.readString(log, StandardCharsets.UTF_8));
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        System.out.println(out);
        assertThat(p.exitValue()).as(name + " (node --test, exit code):\n" + out).isZero();
        // A name that matched no test would pass with "pass 0".
        assertThat(out).as(name + ": exactly one test ran and passed:\n" + out).containsPattern("(?m)^\\S* ?pass 1$");
    }
}
