package io.wattgraph.system;

import java.nio.file.Path;

/**
 * Two "hosts" on one machine: network namespaces joined by a veth pair on a private /24 that only
 * this test uses. No default route, so nothing leaves them; torn down on close.
 */
final class TwoHostNetwork implements AutoCloseable {
  final String nsA;
  final String nsB;
  final String addrA;
  final String addrB;
  final String vethA;

  TwoHostNetwork(String tag, int subnet) {
    this.nsA = "wg-" + tag + "-a";
    this.nsB = "wg-" + tag + "-b";
    this.addrA = "10.231." + subnet + ".1";
    this.addrB = "10.231." + subnet + ".2";
    close(); // leftovers of an aborted earlier run
    this.vethA = "wga" + tag;
    String vethB = "wgb" + tag;
    Shell.run("ip", "netns", "add", nsA);
    Shell.run("ip", "netns", "add", nsB);
    Shell.run("ip", "link", "add", vethA, "type", "veth", "peer", "name", vethB);
    Shell.run("ip", "link", "set", vethA, "netns", nsA);
    Shell.run("ip", "link", "set", vethB, "netns", nsB);
    Shell.run("ip", "-n", nsA, "addr", "add", addrA + "/24", "dev", vethA);
    Shell.run("ip", "-n", nsB, "addr", "add", addrB + "/24", "dev", vethB);
    for (String[] nsDev : new String[][] {{nsA, vethA}, {nsB, vethB}}) {
      Shell.run("ip", "-n", nsDev[0], "link", "set", "lo", "up");
      Shell.run("ip", "-n", nsDev[0], "link", "set", nsDev[1], "up");
    }
  }

  Path nsPath(String ns) {
    return Path.of("/run/netns", ns);
  }

  @Override
  public void close() {
    Shell.runQuietly("ip", "netns", "del", nsA);
    Shell.runQuietly("ip", "netns", "del", nsB);
  }
}
