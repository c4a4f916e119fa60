package io.wattgraph.stream.connection;

import io.wattgraph.stream.Role;
import io.wattgraph.stream.Side;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.FunctionInitializationContext;

/**
 * What {@link ConnectionCorrelator} knows of its peers beyond one connection (load shedding): the
 * hosts seen shedding, and the process last seen serving each server endpoint in a paired
 * connection. Union operator state, so every subtask has every subtask's entries after a restore.
 */
final class PeerMemory {
  /** Bound of the shedding hosts remembered (the least recently seen go first). */
  static final int MAX_SHEDDING_HOSTS = 100_000;
  /** Bound of the server endpoints remembered (the least recently paired go first). */
  static final int MAX_SERVER_ENDPOINTS = 100_000;

  private final long sheddingPeerMemoryMs;
  /**
   * Hosts seen shedding (the local ip of a sampled observation, as connection keys use it) and when
   * (processing time), least recently seen first.
   */
  private final LinkedHashMap<String, Long> sheddingHosts = new LinkedHashMap<>();
  private ListState<Tuple2<String, Long>> sheddingHostsState;
  /**
   * Server endpoints (as a client end's remote address and port: past NAT, loopback qualified by
   * host) and the process last seen serving each in a paired connection, least recently first.
   */
  private final LinkedHashMap<String, Side> servers = new LinkedHashMap<>();
  private ListState<Side> serversState;

  /** @param sheddingPeerMemoryMs how long a host counts as shedding after its last sampled observation; 0: never */
  PeerMemory(long sheddingPeerMemoryMs) {
    this.sheddingPeerMemoryMs = sheddingPeerMemoryMs;
  }

  void initialize(FunctionInitializationContext context) throws Exception {
    sheddingHostsState = context.getOperatorStateStore().getUnionListState(
        new ListStateDescriptor<>("shedding-hosts", Types.TUPLE(Types.STRING, Types.LONG)));
    serversState = context.getOperatorStateStore().getUnionListState(
        new ListStateDescriptor<>("server-endpoints", Types.POJO(Side.class)));
    if (!context.isRestored()) {
      return;
    }
    for (Side server : serversState.get()) {
      rememberServer(server);
    }
    // The union of every subtask's hosts: each host's latest sighting, oldest first.
    Map<String, Long> latest = new HashMap<>();
    for (Tuple2<String, Long> e : sheddingHostsState.get()) {
      latest.merge(e.f0, e.f1, Math::max);
    }
    latest.entrySet().stream().sorted(Map.Entry.comparingByValue())
        .forEach(e -> sheddingHosts.put(e.getKey(), e.getValue()));
    while (sheddingHosts.size() > MAX_SHEDDING_HOSTS) {
      sheddingHosts.remove(sheddingHosts.keySet().iterator().next());
    }
  }

  /** @param now the latest processing time seen, to expire hosts before they are written */
  void snapshot(long now) throws Exception {
    expireSheddingHosts(now);
    List<Tuple2<String, Long>> entries = new ArrayList<>(sheddingHosts.size());
    sheddingHosts.forEach((host, seen) -> entries.add(Tuple2.of(host, seen)));
    sheddingHostsState.update(entries);
    serversState.update(new ArrayList<>(servers.values()));
  }

  /** The process last seen serving this endpoint (as a client end names it), or null. */
  Side server(String hostId, String ip, int port) {
    return servers.get(endpointKey(hostId, ip, port));
  }

  void rememberServer(Side paired) {
    String key = endpointKey(paired.hostId, paired.localIp, paired.localPort);
    Side known = servers.get(key);
    if (known != null && known.tgid == paired.tgid && known.processStartTimeNs == paired.processStartTimeNs
        && known.hostId.equals(paired.hostId)) {
      return; // the common case: the same process again, nothing to copy
    }
    servers.remove(key);
    servers.put(key, serverIdentity(paired));
    if (servers.size() > MAX_SERVER_ENDPOINTS) {
      servers.remove(servers.keySet().iterator().next());
    }
  }

  /** What {@link GraphNode#process} needs of a server end: no socket, no bytes. */
  private static Side serverIdentity(Side s) {
    Side id = new Side();
    id.hostId = s.hostId;
    id.role = Role.SERVER;
    id.localIp = s.localIp;
    id.localPort = s.localPort;
    id.tgid = s.tgid;
    id.processStartTimeNs = s.processStartTimeNs;
    id.comm = s.comm;
    id.cmdline = s.cmdline;
    id.cgroupId = s.cgroupId;
    id.containerId = s.containerId;
    return id;
  }

  static String endpointKey(String hostId, String ip, int port) {
    return hostKey(hostId, ip) + ":" + port;
  }

  /**
   * The memory's key of a host by an address of it. A loopback address names no host of its own,
   * so it is qualified with the observing host (both ends of a loopback connection are on it).
   */
  static String hostKey(String hostId, String ip) {
    return ip.startsWith("127.") || ip.equals("::1") ? hostId + "/" + ip : ip;
  }

  void sheddingSeen(String host, long now) {
    Long seen = sheddingHosts.get(host);
    if (seen != null && seen >= now) {
      return;
    }
    if (seen != null) {
      sheddingHosts.remove(host); // re-inserted last: the map stays in order of last sighting
    }
    sheddingHosts.put(host, now);
    expireSheddingHosts(now);
  }

  /** Drops the hosts not seen shedding within the memory, and the oldest beyond the bound. */
  private void expireSheddingHosts(long now) {
    Iterator<Map.Entry<String, Long>> it = sheddingHosts.entrySet().iterator();
    while (it.hasNext()) {
      Map.Entry<String, Long> oldest = it.next();
      if (sheddingHosts.size() <= MAX_SHEDDING_HOSTS && now - oldest.getValue() <= sheddingPeerMemoryMs) {
        return;
      }
      it.remove();
    }
  }

  /** Whether the host was seen shedding within the memory. */
  boolean sheds(String host, long now) {
    if (sheddingPeerMemoryMs == 0) {
      return false;
    }
    Long seen = sheddingHosts.get(host);
    return seen != null && now - seen <= sheddingPeerMemoryMs;
  }
}
