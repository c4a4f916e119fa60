package io.wattgraph.system;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A cgroup (v2) of a test's own, {@code wattgraph-system-test-PID-TAG} under the v2 mount, that
 * processes are started in through {@link #wrapper}: an agent whose packets an iptables rule
 * matches ({@link BrokerBlock}), or a pod-like process of the soak. On close every process still in
 * it is killed and the cgroup removed; those of an earlier run whose JVM is gone are removed first.
 */
final class ProcessCgroup implements AutoCloseable {
  static final String PREFIX = "wattgraph-system-test-";
  static final Pattern LEFTOVER = Pattern.compile(Pattern.quote(PREFIX) + "(\\d+)-\\S+");

  /** The cgroup's path relative to the v2 mount (what iptables' {@code -m cgroup --path} takes). */
  final String relative;
  private final Path dir;

  ProcessCgroup(String tag) throws IOException {
    Path root = cgroup2Root();
    removeLeftovers(root);
    relative = PREFIX + ProcessHandle.current().pid() + "-" + tag;
    dir = Files.createDirectories(root.resolve(relative));
  }

  /** Prefix of a command: moves the shell into the cgroup, then execs the command (same pid). */
  List<String> wrapper() {
    return List.of("sh", "-c", "echo $$ > " + dir.resolve("cgroup.procs") + " && exec \"$@\"", "sh");
  }

  @Override
  public void close() throws IOException, InterruptedException {
    // A process left behind (a test that failed midway) would keep the cgroup busy.
    for (int attempt = 0; attempt < 50 && Files.exists(dir); attempt++) {
      for (String pid : Files.readAllLines(dir.resolve("cgroup.procs"))) {
        ProcessHandle.of(Long.parseLong(pid.trim())).ifPresent(ProcessHandle::destroyForcibly);
      }
      try {
        Files.deleteIfExists(dir);
      } catch (IOException busy) {
        Thread.sleep(100);
      }
    }
  }

  /** The cgroup v2 mount (the unified one on hybrid hosts). */
  static Path cgroup2Root() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/mounts"))) {
      String[] f = line.split(" ");
      if (f.length > 2 && f[2].equals("cgroup2")) {
        return Path.of(f[1]);
      }
    }
    Preconditions.require(false, "no cgroup v2 mount: the test starts processes in cgroups of its own");
    throw new IllegalStateException("unreachable");
  }

  /** The pid of the JVM that made a cgroup or rule named {@code name}, if it is one of ours. */
  static Long ownerPid(String name) {
    Matcher m = LEFTOVER.matcher(name);
    return m.find() ? Long.valueOf(m.group(1)) : null;
  }

  /** Cgroups of runs whose JVM was killed before its teardown. */
  private static void removeLeftovers(Path root) throws IOException {
    try (var dirs = Files.list(root)) {
      for (Path d : dirs.toList()) {
        Long owner = ownerPid(d.getFileName().toString());
        if (owner != null && d.getFileName().toString().startsWith(PREFIX) && ProcessHandle.of(owner).isEmpty()) {
          Files.deleteIfExists(d);
        }
      }
    }
  }
}
