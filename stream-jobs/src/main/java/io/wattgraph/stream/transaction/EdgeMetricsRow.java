package io.wattgraph.stream.transaction;

import io.wattgraph.stream.TransactionTotals;
import io.wattgraph.stream.window.LatencyStats;

/** One edge window's result; the fields of {@code EdgeMetrics} (see its schema docs). */
public class EdgeMetricsRow {
  public String clientKind;
  public String clientId;
  public String serverKind;
  public String serverId;
  public long windowStartNs;
  public long windowEndNs;
  public int revision;
  public TransactionTotals tx;
  /** max(client, server transactions) / window seconds. */
  public double requestRate;
  public long requestBytes;
  public long responseBytes;
  public LatencyStats clientRtt;
  public LatencyStats serverTime;
  /** Mean client round trip minus mean server time (PowerThesis §5.3.2); null unless both ends reported. */
  public Double networkTimeMeanNs;

  public EdgeMetricsRow() {}

  /** Kafka key and sink buffer key. */
  public String key() {
    return EdgeInput.key(clientKind, clientId, serverKind, serverId);
  }

  @Override
  public String toString() {
    return "EdgeMetricsRow{" + key() + " [" + windowStartNs + "," + windowEndNs + ") rev " + revision + " rate "
        + requestRate + " rttP50 " + clientRtt.p50Ns + " serverP50 " + serverTime.p50Ns + " network "
        + networkTimeMeanNs + "}";
  }
}
