package io.wattgraph.stream.source;

import io.wattgraph.stream.Role;

/** Builds observations for tests: one host's view of one socket. */
public final class Observations {
  private Observations() {}

  public static Observation obs(String hostId, long cookie, Role role, String localIp, int localPort,
      String remoteIp, int remotePort, int tgid, long sent, long received) {
    Observation o = new Observation();
    o.hostId = hostId;
    o.socketCookie = cookie;
    o.role = role;
    o.localIp = localIp;
    o.localPort = localPort;
    o.remoteIp = remoteIp;
    o.remotePort = remotePort;
    o.tgid = tgid;
    o.processStartTimeNs = tgid == 0 ? 0 : 1000L * tgid;
    o.comm = tgid == 0 ? "" : "proc" + tgid;
    o.cmdline = tgid == 0 ? null : "/usr/bin/proc" + tgid + " --serve";
    o.cgroupId = 77;
    o.eventTimeNs = 1_000_000L;
    o.bytesSent = sent;
    o.bytesReceived = received;
    return o;
  }

  public static Observation at(Observation o, long eventTimeNs) {
    o.eventTimeNs = eventTimeNs;
    return o;
  }

  public static Observation closed(Observation o) {
    o.closed = true;
    return o;
  }
}
