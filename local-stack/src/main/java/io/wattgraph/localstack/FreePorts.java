package io.wattgraph.localstack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

/** Picks loopback ports for servers that need to know theirs before they bind. */
final class FreePorts {
  private FreePorts() {}

  static int resolve(int port) {
    return resolve(new int[] {port})[0];
  }

  /**
   * Each 0 in {@code ports} replaced by a free port, all different: the sockets are held until every
   * port is picked (one at a time, the second could get the port the first just released).
   */
  static int[] resolve(int... ports) {
    int[] out = ports.clone();
    List<ServerSocket> held = new ArrayList<>();
    try {
      for (int i = 0; i < out.length; i++) {
        if (out[i] == 0) {
          ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
          held.add(s);
          s.setReuseAddress(true);
          out[i] = s.getLocalPort();
        }
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException("no free loopback port", e);
    } finally {
      for (ServerSocket s : held) {
        try {
          s.close();
        } catch (IOException e) {
          // closing a listening socket we own: nothing to do
        }
      }
    }
  }
}
