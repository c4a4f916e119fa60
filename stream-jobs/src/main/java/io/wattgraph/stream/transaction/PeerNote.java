package io.wattgraph.stream.transaction;

import io.wattgraph.stream.Transaction;

/**
 * What {@link TransactionEdges} tells {@link MaskedPeers}, keyed by the client-port-0 form of a connection
 * ({@link #maskedKey}): either the process of one end (a record's first on its connection key), or a
 * record whose other end never reported on its own key by its window's end.
 */
public class PeerNote {
  public String maskedKey;
  /** The record's own connection key ({@link Transaction#connectionKey()}). */
  public String connectionKey;
  /** An end's process: which role, and its graph id (null for an unpaired record). */
  public boolean client;
  public String processId;
  /** The record left without a peer (null for a process note). */
  public Transaction unpaired;

  public PeerNote() {}

  static PeerNote process(Transaction t) {
    PeerNote n = new PeerNote();
    n.maskedKey = maskedKey(t);
    n.connectionKey = t.connectionKey();
    n.client = t.isClient();
    n.processId = t.processId();
    return n;
  }

  static PeerNote unpaired(Transaction t) {
    PeerNote n = new PeerNote();
    n.maskedKey = maskedKey(t);
    n.connectionKey = t.connectionKey();
    n.client = t.isClient();
    n.unpaired = t;
    return n;
  }

  /** Client address with port 0, then the server endpoint: one key for all of a client IP's connections to it. */
  static String maskedKey(Transaction t) {
    return t.isClient() ? t.localIp + ">" + t.remoteIp + ":" + t.remotePort : t.remoteIp + ">" + t.localIp + ":" + t.localPort;
  }

  @Override
  public String toString() {
    return "PeerNote{" + maskedKey + (unpaired == null ? (client ? " client " : " server ") + processId : " " + unpaired) + "}";
  }
}
