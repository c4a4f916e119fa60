package io.wattgraph.stream;

import io.wattgraph.stream.window.MetricInput;
import java.util.Arrays;

/**
 * Running totals of one window key (the incremental state of a window: no sample is buffered).
 * Thread and process counts are kept per sampling interval (a window holds window/interval of
 * them, e.g. 10) so that the result is the highest per-interval count, summed over the samples of
 * that interval (the GROUP records of a pod's containers).
 */
public class MetricsAccumulator {
  public String level;
  public String hostId;
  public String entityId;
  public String groupId;
  public String podUid;
  public String comm;
  /**
   * Pod metadata of the latest sample that had any (by interval end, not by the latest sample: the
   * agent may learn the name after the UID, and a later sample without it must not erase it).
   */
  public PodMetadata pod;
  public long podIntervalEndNs = Long.MIN_VALUE;
  /** intervalEndNs of the latest sample seen, for groupId/comm (latest wins). */
  public long latestIntervalEndNs = Long.MIN_VALUE;
  public int samples;
  public long cpuTimeNs;
  public double energyJoules;
  public double idleEnergyJoules;
  public int measuredSamples;
  public int estimatedSamples;
  /** Distinct interval ends, with the summed thread and process counts of each. */
  public long[] intervalEnds = new long[0];
  public int[] threadsPerInterval = new int[0];
  public int[] processesPerInterval = new int[0];
  /** The host's CPUs online, the highest reported in the window; 0 = unknown (v1 agents). */
  public int hostCores;
  /** The window's TransactionStats (records = 0: none). */
  public TransactionTotals tx = new TransactionTotals();
  /** The window's HTTP routes, merged like tx (same state: a late record revises both). */
  public HttpRouteTotals httpRoutes = new HttpRouteTotals();
  /**
   * Ids of the samples counted: an agent's replayed duplicate lands in the same window (same
   * interval end) and is skipped (transactions are deduplicated before the windows, SeenRecords).
   */
  public RecordIdSet sampleIds = new RecordIdSet();

  public MetricsAccumulator() {}

  public void add(MetricInput in) {
    if (level == null) {
      level = in.level;
      hostId = in.hostId;
      entityId = in.entityId;
    }
    if (in.isTransactions()) {
      // Identity comes from the ResourceSamples (latest wins); a transaction only fills a gap.
      groupId = groupId != null ? groupId : in.groupId;
      podUid = podUid != null ? podUid : in.podUid;
      comm = comm != null ? comm : in.comm;
      if (in.transaction != null) {
        addTransaction(in.transaction);
        httpRoutes.addAll(in.transaction.httpRoutes);
      } else {
        tx.merge(in.transactions);
        if (in.httpRoutes != null) {
          httpRoutes.merge(in.httpRoutes);
        }
      }
      return;
    }
    if (!sampleIds.add(in.recordId)) {
      return;
    }
    if (in.intervalEndNs >= latestIntervalEndNs) {
      latestIntervalEndNs = in.intervalEndNs;
      groupId = in.groupId != null ? in.groupId : groupId;
      podUid = in.podUid != null ? in.podUid : podUid;
      comm = in.comm != null ? in.comm : comm;
    }
    offerPod(in.pod, in.intervalEndNs);
    samples++;
    cpuTimeNs += in.cpuTimeNs;
    energyJoules += in.energyJoules;
    idleEnergyJoules += in.idleEnergyJoules;
    if (in.measured) {
      measuredSamples++;
    } else {
      estimatedSamples++;
    }
    addCounts(in.intervalEndNs, in.threads, in.processes);
    hostCores = Math.max(hostCores, in.hostCores);
  }

  /** Counts, bytes and histograms of one TransactionStats record (the namespace windows too). */
  void addTransaction(Transaction t) {
    tx.add(t.isClient(), t.transactions, t.requestBytes, t.responseBytes, t.subBucketBits, t.buckets, t.counts);
  }

  private void offerPod(PodMetadata p, long intervalEndNs) {
    if (p != null && intervalEndNs >= podIntervalEndNs) {
      pod = p;
      podIntervalEndNs = intervalEndNs;
    }
  }

  private void addCounts(long intervalEnd, int threads, int processes) {
    for (int i = 0; i < intervalEnds.length; i++) {
      if (intervalEnds[i] == intervalEnd) {
        threadsPerInterval[i] += threads;
        processesPerInterval[i] += processes;
        return;
      }
    }
    int n = intervalEnds.length;
    intervalEnds = Arrays.copyOf(intervalEnds, n + 1);
    threadsPerInterval = Arrays.copyOf(threadsPerInterval, n + 1);
    processesPerInterval = Arrays.copyOf(processesPerInterval, n + 1);
    intervalEnds[n] = intervalEnd;
    threadsPerInterval[n] = threads;
    processesPerInterval[n] = processes;
  }

  /** Merges the totals of disjoint inputs (tumbling windows never merge; session windows would). */
  public void merge(MetricsAccumulator o) {
    if (o.samples == 0 && o.tx.records == 0) {
      return;
    }
    sampleIds.addAll(o.sampleIds);
    tx.merge(o.tx);
    httpRoutes.merge(o.httpRoutes);
    if (level == null) {
      level = o.level;
      hostId = o.hostId;
      entityId = o.entityId;
    }
    if (o.latestIntervalEndNs >= latestIntervalEndNs) {
      latestIntervalEndNs = o.latestIntervalEndNs;
      groupId = o.groupId != null ? o.groupId : groupId;
      podUid = o.podUid != null ? o.podUid : podUid;
      comm = o.comm != null ? o.comm : comm;
    }
    offerPod(o.pod, o.podIntervalEndNs);
    samples += o.samples;
    cpuTimeNs += o.cpuTimeNs;
    energyJoules += o.energyJoules;
    idleEnergyJoules += o.idleEnergyJoules;
    measuredSamples += o.measuredSamples;
    estimatedSamples += o.estimatedSamples;
    hostCores = Math.max(hostCores, o.hostCores);
    for (int i = 0; i < o.intervalEnds.length; i++) {
      addCounts(o.intervalEnds[i], o.threadsPerInterval[i], o.processesPerInterval[i]);
    }
  }

  /** Inputs counted so far (samples and transaction records): unchanged by a skipped duplicate. */
  public long inputs() {
    return samples + (long) tx.records;
  }

  public int maxThreads() {
    return Arrays.stream(threadsPerInterval).max().orElse(0);
  }

  public int maxProcesses() {
    return Arrays.stream(processesPerInterval).max().orElse(0);
  }

  public String powerSource() {
    if (measuredSamples > 0 && estimatedSamples > 0) {
      return "MIXED";
    }
    return measuredSamples > 0 ? "MEASURED" : "ESTIMATED";
  }
}
