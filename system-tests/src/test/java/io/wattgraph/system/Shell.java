package io.wattgraph.system;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs short system commands (ip, iptables) and fails with their output when they fail. */
final class Shell {
  private Shell() {}

  static String run(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("timed out: " + String.join(" ", cmd));
      }
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        throw new IllegalStateException("`" + String.join(" ", cmd) + "` exited " + p.exitValue() + ": " + out);
      }
      return out;
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + List.of(cmd), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  static void runQuietly(String... cmd) {
    try {
      run(cmd);
    } catch (RuntimeException ignored) {
      // teardown of something that may already be gone
    }
  }
}
