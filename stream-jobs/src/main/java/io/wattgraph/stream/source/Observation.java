package io.wattgraph.stream.source;

import io.wattgraph.stream.Role;
import io.wattgraph.stream.typeinfo.RecordTypeInfoFactory;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * One host's observation of one socket, decoded from a ConnectionEvent.
 *
 * <p>A record of our own rather than the Avro class, so the job needs no Avro serializer and
 * state stays readable if the wire schema gains fields; Flink moves it with the hand-written
 * {@link io.wattgraph.stream.typeinfo.ObservationSerializer}, not by reflection. Addresses are already formatted (dotted
 * quad / RFC 5952), so comparing strings compares addresses.
 */
@TypeInfo(RecordTypeInfoFactory.class)
public class Observation {
  public String hostId;
  public long eventTimeNs;
  public boolean closed;
  public String localIp;
  public int localPort;
  public String remoteIp;
  public int remotePort;
  public Role role;
  public int tgid;
  public long processStartTimeNs;
  public String comm;
  public String cmdline;
  public long cgroupId;
  public String containerId;
  public long socketCookie;
  public long bytesSent;
  public long bytesReceived;
  /**
   * ConnectionEvent v3: the probability with which the agent's load shedding kept this socket's
   * connection (1 = not sampled; 0 = shed but reported for its traffic). Records before v3: 1.
   */
  public double keepProbability = 1.0;

  public Observation() {}

  public String localEndpoint() {
    return Endpoints.of(localIp, localPort);
  }

  public String remoteEndpoint() {
    return Endpoints.of(remoteIp, remotePort);
  }

  /** True when the local endpoint is the lower one of the sorted pair (see {@link #connectionKey()}). */
  public boolean localIsLow() {
    return Endpoints.compare(localIp, localPort, remoteIp, remotePort) <= 0;
  }

  /**
   * Both ends of a connection map to the same key whatever their role: the sorted endpoint pair.
   * Keying by the unordered pair (not by client/server) lets a side with role UNKNOWN pair with a
   * side that knows its role.
   */
  public String connectionKey() {
    return localIsLow()
        ? localEndpoint() + "|" + remoteEndpoint()
        : remoteEndpoint() + "|" + localEndpoint();
  }

  public boolean sameSocket(String otherHostId, long otherCookie) {
    return Objects.equals(hostId, otherHostId) && socketCookie == otherCookie;
  }

  @Override
  public String toString() {
    return "Observation{" + hostId + " " + role + " " + localEndpoint() + "->" + remoteEndpoint()
        + " cookie=" + socketCookie + " tgid=" + tgid + " sent=" + bytesSent + " recv=" + bytesReceived
        + (keepProbability != 1.0 ? " keep=" + keepProbability : "") + (closed ? " CLOSED" : "") + "}";
  }
}
