package io.wattgraph.system;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One agent's network path to the broker, cut and restored at will: the agent runs in a cgroup (v2)
 * of its own, and an iptables rule in the agent's network namespace (the machine's: the agents run
 * there and watch their host namespaces through {@code --netns}) drops every packet that cgroup
 * sends to the broker's port, as a partition would: connections stall, reconnects time out, the
 * broker and every other client go on. Only this agent's packets to this broker match. The rule and
 * the cgroup are removed on close; those of an earlier run whose JVM is gone are removed first.
 */
final class BrokerBlock implements AutoCloseable {
  private static final String PREFIX = "wattgraph-system-test-";
  private static final Pattern LEFTOVER = Pattern.compile(Pattern.quote(PREFIX) + "(\\d+)-\\S+");

  private final Path cgroup;
  private final String relative;
  private final List<String> rule;
  private boolean blocked;

  /** {@code tag} names this agent; {@code brokerPort} is the broker's port on 127.0.0.1. */
  BrokerBlock(String tag, int brokerPort) throws IOException {
    Path root = cgroup2Root();
    removeLeftovers(root);
    relative = PREFIX + ProcessHandle.current().pid() + "-" + tag;
    cgroup = Files.createDirectories(root.resolve(relative));
    rule = List.of("OUTPUT", "-o", "lo", "-p", "tcp", "-d", "127.0.0.1", "--dport", String.valueOf(brokerPort),
        "-m", "cgroup", "--path", relative, "-m", "comment", "--comment", relative, "-j", "DROP");
  }

  /** Prefix of the agent's command: moves the shell into the cgroup, then execs the agent. */
  List<String> wrapper() {
    return List.of("sh", "-c", "echo $$ > " + cgroup.resolve("cgroup.procs") + " && exec \"$@\"", "sh");
  }

  void block() {
    iptables("-I", rule);
    blocked = true;
  }

  void unblock() {
    iptables("-D", rule);
    blocked = false;
  }

  private static void iptables(String op, List<String> rule) {
    List<String> cmd = new ArrayList<>(List.of("iptables", "-w", op));
    cmd.addAll(rule);
    Shell.run(cmd.toArray(String[]::new));
  }

  @Override
  public void close() throws IOException {
    if (blocked) {
      unblock();
    }
    // Empty once the agent is gone (closed before this, in reverse order of starting).
    Files.deleteIfExists(cgroup);
  }

  /** The cgroup v2 mount (the unified one on hybrid hosts). */
  static Path cgroup2Root() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/mounts"))) {
      String[] f = line.split(" ");
      if (f.length > 2 && f[2].equals("cgroup2")) {
        return Path.of(f[1]);
      }
    }
    Preconditions.require(false, "no cgroup v2 mount: an agent's path to the broker is blocked by its cgroup");
    throw new IllegalStateException("unreachable");
  }

  /** Rules and cgroups of runs whose JVM was killed before its teardown. */
  private static void removeLeftovers(Path root) throws IOException {
    for (String line : Shell.run("iptables", "-w", "-S", "OUTPUT").split("\n")) {
      Matcher m = LEFTOVER.matcher(line);
      if (line.startsWith("-A OUTPUT ") && m.find() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) {
        List<String> cmd = new ArrayList<>(List.of("iptables", "-w", "-D"));
        cmd.addAll(List.of(line.substring(3).split(" ")));
        Shell.runQuietly(cmd.toArray(String[]::new));
      }
    }
    try (var dirs = Files.list(root)) {
      for (Path d : dirs.toList()) {
        Matcher m = LEFTOVER.matcher(d.getFileName().toString());
        if (m.matches() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) {
          Files.deleteIfExists(d);
        }
      }
    }
  }
}
