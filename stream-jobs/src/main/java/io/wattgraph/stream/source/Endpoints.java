package io.wattgraph.stream.source;

/** Textual endpoints and their total order (used to sort a connection's two ends). */
public final class Endpoints {
  private Endpoints() {}

  /** {@code ip:port}, the form used by contracts.md for keys and External server ids. */
  public static String of(String ip, int port) {
    return ip + ":" + port;
  }

  /** Any total order works as long as both hosts compute the same one; this one is readable. */
  public static int compare(String ipA, int portA, String ipB, int portB) {
    int c = ipA.compareTo(ipB);
    return c != 0 ? c : Integer.compare(portA, portB);
  }
}
