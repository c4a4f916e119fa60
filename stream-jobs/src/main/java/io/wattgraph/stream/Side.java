package io.wattgraph.stream;

import io.wattgraph.stream.source.Observation;

/** The latest view of one end (one socket on one host) of a connection; correlator state. */
public class Side {
  public String hostId;
  public long socketCookie;
  public Role role;
  public String localIp;
  public int localPort;
  public String remoteIp;
  public int remotePort;
  public int tgid;
  public long processStartTimeNs;
  public String comm;
  public String cmdline;
  public long cgroupId;
  public String containerId;
  public long bytesSent;
  public long bytesReceived;
  public long firstSeenNs;
  public long lastSeenNs;
  public boolean closed;
  /**
   * The socket's keep probability (ConnectionEvent v3), fixed for its lifetime: the first event's.
   * The initializer is also what state written before the field existed restores to (not sampled).
   */
  public double keepProbability = 1.0;

  public Side() {}

  public static Side from(Observation o) {
    Side s = new Side();
    s.hostId = o.hostId;
    s.socketCookie = o.socketCookie;
    s.localIp = o.localIp;
    s.localPort = o.localPort;
    s.remoteIp = o.remoteIp;
    s.remotePort = o.remotePort;
    s.role = o.role;
    s.firstSeenNs = o.eventTimeNs;
    s.lastSeenNs = o.eventTimeNs;
    s.copyProcess(o);
    s.bytesSent = o.bytesSent;
    s.bytesReceived = o.bytesReceived;
    s.closed = o.closed;
    s.keepProbability = o.keepProbability;
    return s;
  }

  public boolean sameSocket(Observation o) {
    return o.sameSocket(hostId, socketCookie);
  }

  /** Order-tolerant merge: counters are cumulative, so max; CLOSED is sticky. */
  public void merge(Observation o) {
    bytesSent = Math.max(bytesSent, o.bytesSent);
    bytesReceived = Math.max(bytesReceived, o.bytesReceived);
    firstSeenNs = Math.min(firstSeenNs, o.eventTimeNs);
    closed |= o.closed;
    if (role == Role.UNKNOWN && o.role != Role.UNKNOWN) {
      role = o.role;
    }
    // A socket first seen outside process context (tgid 0) learns its process later; the latest
    // observation with a process wins.
    if (o.tgid != 0 && (tgid == 0 || o.eventTimeNs >= lastSeenNs)) {
      copyProcess(o);
    }
    lastSeenNs = Math.max(lastSeenNs, o.eventTimeNs);
  }

  private void copyProcess(Observation o) {
    boolean sameProcess = tgid == o.tgid && processStartTimeNs == o.processStartTimeNs;
    tgid = o.tgid;
    processStartTimeNs = o.processStartTimeNs;
    comm = o.comm;
    // A process's command line and container do not become unknown: null only means the agent
    // could not read them this time (e.g. the process had exited before its CLOSED was read).
    cmdline = o.cmdline != null || !sameProcess ? o.cmdline : cmdline;
    cgroupId = o.cgroupId;
    containerId = o.containerId != null || !sameProcess ? o.containerId : containerId;
  }
}
