package io.wattgraph.system;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * One agent's network path to the broker, cut and restored at will: the agent runs in a cgroup (v2)
 * of its own ({@link ProcessCgroup}), and an iptables rule in the agent's network namespace (the
 * machine's: the agents run there and watch their host namespaces through {@code --netns}) drops
 * every packet that cgroup sends to the broker's port, as a partition would: connections stall,
 * reconnects time out, the broker and every other client go on. Only this agent's packets to this
 * broker match. The rule and the cgroup are removed on close; rules of an earlier run whose JVM is
 * gone are removed first.
 */
final class BrokerBlock implements AutoCloseable {
  private final ProcessCgroup cgroup;
  private final List<String> rule;
  private boolean blocked;

  /** {@code tag} names this agent; {@code brokerPort} is the broker's port on 127.0.0.1. */
  BrokerBlock(String tag, int brokerPort) throws IOException {
    removeLeftoverRules();
    cgroup = new ProcessCgroup(tag);
    String relative = cgroup.relative;
    rule = List.of("OUTPUT", "-o", "lo", "-p", "tcp", "-d", "127.0.0.1", "--dport", String.valueOf(brokerPort),
        "-m", "cgroup", "--path", relative, "-m", "comment", "--comment", relative, "-j", "DROP");
  }

  /** Prefix of the agent's command: moves the shell into the cgroup, then execs the agent. */
  List<String> wrapper() {
    return cgroup.wrapper();
  }

  void block() {
    iptables("-I", rule);
    blocked = true;
  }

  void unblock() {
    iptables("-D", rule);
    blocked = false;
  }

  boolean blocked() {
    return blocked;
  }

  private static void iptables(String op, List<String> rule) {
    List<String> cmd = new ArrayList<>(List.of("iptables", "-w", op));
    cmd.addAll(rule);
    Shell.run(cmd.toArray(String[]::new));
  }

  @Override
  public void close() throws Exception {
    if (blocked) {
      unblock();
    }
    // Empty once the agent is gone (closed before this, in reverse order of starting).
    cgroup.close();
  }

  /** Rules of runs whose JVM was killed before its teardown. */
  private static void removeLeftoverRules() {
    for (String line : Shell.run("iptables", "-w", "-S", "OUTPUT").split("\n")) {
      Long owner = ProcessCgroup.ownerPid(line);
      if (line.startsWith("-A OUTPUT ") && owner != null && ProcessHandle.of(owner).isEmpty()) {
        List<String> cmd = new ArrayList<>(List.of("iptables", "-w", "-D"));
        cmd.addAll(List.of(line.substring(3).split(" ")));
        Shell.runQuietly(cmd.toArray(String[]::new));
      }
    }
  }
}
