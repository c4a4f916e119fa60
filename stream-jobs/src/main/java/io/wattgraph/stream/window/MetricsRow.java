package io.wattgraph.stream.window;

import io.wattgraph.stream.PodMetadata;
import io.wattgraph.stream.TransactionTotals;

/** One window's result for one entity; the fields of {@code WindowMetrics} (see its schema docs). */
public class MetricsRow {
  public String level;
  public String hostId;
  public String entityId;
  public String groupId;
  public String podUid;
  public String comm;
  /** The pod's name, namespace, labels (PROCESS, GROUP, POD); null when unknown. */
  public PodMetadata pod;
  public long windowStartNs;
  public long windowEndNs;
  public int revision;
  public int samples;
  public int intervals;
  public double cpuSeconds;
  public double cpuCores;
  public Integer hostCores;
  public Double hostCpuShare;
  public double energyJoules;
  public double powerWatts;
  public Double idlePowerWatts;
  /** MEASURED, ESTIMATED or MIXED. */
  public String powerSource;
  public int threads;
  public int processes;
  /** The window's TransactionStats totals and histograms; null when it had none (v1 fields only). */
  public TransactionTotals tx;
  /** Read off tx's histograms; null with tx. */
  public LatencyStats clientRtt;
  public LatencyStats serverTime;
  /** The window's HTTP routes after the cap, in output order (HttpRouteCap); empty without any. */
  public HttpRouteRow[] httpRoutes = new HttpRouteRow[0];
  /** PowerThesis Eq. 3.3-3.5 (see EntityWindowFunction#operationalAnalysis); null where not computable. */
  public Double utilization;
  public Double serviceDemandSeconds;
  public Double saturationRate;
  /** NAMESPACE rows only (null otherwise): distinct hosts, pods and containers in the window. */
  public Integer hosts;
  public Integer pods;
  public Integer containers;

  public MetricsRow() {}

  /**
   * Kafka key and sink buffer key: level|hostId|entityId (the window key); the graph sink adds the
   * window end when it keeps history.
   */
  public String key() {
    return level + "|" + hostId + "|" + entityId;
  }

  @Override
  public String toString() {
    return "MetricsRow{" + key() + " [" + windowStartNs + "," + windowEndNs + ") rev " + revision + " samples "
        + samples + " cpuCores " + cpuCores + " powerW " + powerWatts + " energyJ " + energyJoules + " "
        + powerSource + " threads " + threads + " processes " + processes
        + (tx == null ? "" : " client " + tx.clientTransactions + " server " + tx.serverTransactions
            + " rttP50 " + clientRtt.p50Ns + " serverP50 " + serverTime.p50Ns + " U " + utilization
            + " D " + serviceDemandSeconds + " routes " + httpRoutes.length) + "}";
  }
}
