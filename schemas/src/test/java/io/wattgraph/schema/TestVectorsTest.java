package io.wattgraph.schema;


import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The shared byte-level vectors in schemas/test-vectors: the Rust suite checks the same files, so
 * bytes either encoder writes are the bytes the other decodes.
 */
class TestVectorsTest extends SharedVectorsTest<ConnectionEvent> {

  TestVectorsTest() {
    super("connection-event", 7, ConnectionEvent.getClassSchema());
  }

  @Override
  ConnectionEvent record(JsonNode event) {
    return fromJson(event);
  }

  @Override
  ByteBuffer encode(ConnectionEvent r) throws IOException {
    return WattgraphSchemas.connectionEventEncoder().encode(r);
  }

  @Override
  ConnectionEvent decode(byte[] b) throws IOException {
    return WattgraphSchemas.connectionEventDecoder().decode(b);
  }

  static ConnectionEvent fromJson(JsonNode e) {
    return ConnectionEvent.newBuilder()
        .setKind(ConnectionEventKind.valueOf(e.get("kind").asText()))
        .setHostId(e.get("hostId").asText())
        .setEventTimeNs(e.get("eventTimeNs").asLong())
        .setLocalAddress(IpAddresses.parse(e.get("localAddress").asText()))
        .setLocalPort(e.get("localPort").asInt())
        .setRemoteAddress(IpAddresses.parse(e.get("remoteAddress").asText()))
        .setRemotePort(e.get("remotePort").asInt())
        .setRole(ConnectionRole.valueOf(e.get("role").asText()))
        .setPid(e.get("pid").asInt())
        .setTgid(e.get("tgid").asInt())
        .setProcessStartTimeNs(e.get("processStartTimeNs").asLong())
        .setComm(e.get("comm").asText())
        .setCmdline(e.get("cmdline").isNull() ? null : e.get("cmdline").asText())
        .setCgroupId(e.get("cgroupId").asLong())
        .setContainerId(e.get("containerId").isNull() ? null : e.get("containerId").asText())
        .setNetnsInode(e.get("netnsInode").asLong())
        .setSocketCookie(e.get("socketCookie").asLong())
        .setBytesSent(e.get("bytesSent").asLong())
        .setBytesReceived(e.get("bytesReceived").asLong())
        .setNat(nat(e.get("nat")))
        .setKeepProbability(e.has("keepProbability") ? e.get("keepProbability").asDouble() : 1.0)
        .build();
  }

  /** Optional in the JSON (added in v2): absent or null means no translation. */
  static ConnectionNat nat(JsonNode n) {
    if (n == null || n.isNull()) {
      return null;
    }
    return ConnectionNat.newBuilder()
        .setLocalAddress(IpAddresses.parse(n.get("localAddress").asText()))
        .setLocalPort(n.get("localPort").asInt())
        .setRemoteAddress(IpAddresses.parse(n.get("remoteAddress").asText()))
        .setRemotePort(n.get("remotePort").asInt())
        .build();
  }

}
