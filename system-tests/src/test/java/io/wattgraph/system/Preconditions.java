package io.wattgraph.system;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;

/**
 * System tests need root (BPF, network namespaces) and the built agent. On CI (CI=true) a missing
 * precondition fails the test with the reason; elsewhere the test is skipped with it.
 */
final class Preconditions {
  private Preconditions() {}

  static void require(boolean ok, String why) {
    if (ok) {
      return;
    }
    if ("true".equals(System.getenv("CI"))) {
      throw new AssertionError("system test cannot run on CI: " + why);
    }
    Assumptions.assumeTrue(false, why);
  }

  static Path agentBinary() {
    Path bin = Path.of(System.getProperty("wattgraph.agentBinary",
        Path.of("..", "target", "release", "wattgraph-agent").toString()));
    require(Files.isExecutable(bin), "agent binary not built at " + bin.toAbsolutePath()
        + " (cargo build --release -p wattgraph-agent)");
    return bin;
  }

  static void requireRoot() {
    require("root".equals(System.getProperty("user.name")),
        "needs root for eBPF and network namespaces (running as " + System.getProperty("user.name") + ")");
  }
}
