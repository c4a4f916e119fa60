package io.wattgraph.system;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Several "hosts" on one machine: network namespaces on a private /24 that only this test uses,
 * each with one veth to a bridge in a namespace of its own (the switch), so that nothing of the
 * network is in the machine's own namespace. No default route, so nothing leaves them. Deleting
 * the namespaces (on close) deletes every interface with them.
 */
final class NamespaceHosts implements AutoCloseable {
  final List<String> namespaces = new ArrayList<>();
  final List<String> addresses = new ArrayList<>();
  private final String sw;

  /** {@code n} hosts {@code wg-TAG-0..n-1} at 10.231.SUBNET.1..n; TAG should carry the pid. */
  NamespaceHosts(String tag, int subnet, int n) {
    sw = "wg-" + tag + "-sw";
    for (int i = 0; i < n; i++) {
      namespaces.add("wg-" + tag + "-" + i);
      addresses.add("10.231." + subnet + "." + (i + 1));
    }
    close(); // leftovers of an aborted earlier run
    try {
      Shell.run("ip", "netns", "add", sw);
      Shell.run("ip", "-n", sw, "link", "add", "br0", "type", "bridge");
      Shell.run("ip", "-n", sw, "link", "set", "br0", "up");
      for (int i = 0; i < n; i++) {
        String ns = namespaces.get(i);
        String port = "p" + i;
        Shell.run("ip", "netns", "add", ns);
        Shell.run("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", sw);
        Shell.run("ip", "-n", sw, "link", "set", port, "master", "br0");
        Shell.run("ip", "-n", sw, "link", "set", port, "up");
        Shell.run("ip", "-n", ns, "addr", "add", addresses.get(i) + "/24", "dev", "eth0");
        Shell.run("ip", "-n", ns, "link", "set", "lo", "up");
        Shell.run("ip", "-n", ns, "link", "set", "eth0", "up");
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  Path nsPath(int host) {
    return Path.of("/run/netns", namespaces.get(host));
  }

  @Override
  public void close() {
    for (String ns : namespaces) {
      Shell.runQuietly("ip", "netns", "del", ns);
    }
    Shell.runQuietly("ip", "netns", "del", sw);
  }
}
