package io.wattgraph.stream.transaction;

import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.typeinfo.RecordTypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * One TransactionStats record as input of its edge's window: the edge's two ends (graph ids, a
 * Process or an External node, as ConnectionGraphWriter names them) and the record (one end's view).
 */
@TypeInfo(RecordTypeInfoFactory.class)
public class EdgeInput {
  public static final String PROCESS = "PROCESS";
  public static final String EXTERNAL = "EXTERNAL";

  public String clientKind;
  public String clientId;
  public String serverKind;
  public String serverId;
  public Transaction transaction;
  /** The record taken back from this edge (it counted here before its real edge was known): subtracted. */
  public boolean retraction;

  public EdgeInput() {}

  /** The window key and Kafka key: kind-qualified ids as in {@code GraphNode#edgeKey}. */
  public String key() {
    return key(clientKind, clientId, serverKind, serverId);
  }

  static String key(String clientKind, String clientId, String serverKind, String serverId) {
    return (PROCESS.equals(clientKind) ? "P:" : "E:") + clientId + ">" + (PROCESS.equals(serverKind) ? "P:" : "E:")
        + serverId;
  }

  @Override
  public String toString() {
    return "EdgeInput{" + (retraction ? "-" : "") + key() + " " + transaction + "}";
  }
}
