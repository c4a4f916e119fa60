package io.wattgraph.stream.window;

import io.wattgraph.stream.HttpRouteTotals;
import io.wattgraph.stream.PodMetadata;
import io.wattgraph.stream.Transaction;
import io.wattgraph.stream.TransactionTotals;
import io.wattgraph.stream.source.Sample;
import io.wattgraph.stream.typeinfo.RecordTypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * One sample as input of one window key: a PROCESS record feeds its process, a GROUP record its
 * group and (with a pod UID) its pod, a HOST record its host. Or one TransactionStats record
 * ({@link #transaction} set, the resource fields zero) as input of its process, its group and pod
 * (when {@code ProcessGroups} knows them) and its host; or several such records of one key and
 * window, combined ({@link #transactions} set, {@code TransactionInputCombiner}). A GROUP record
 * whose pod namespace is known also feeds its NAMESPACE (all hosts: the namespace windows are keyed
 * by the namespace alone), as do the transactions of that pod's processes.
 */
@TypeInfo(RecordTypeInfoFactory.class)
public class MetricInput {
  public static final String PROCESS = "PROCESS";
  public static final String GROUP = "GROUP";
  public static final String POD = "POD";
  public static final String HOST = "HOST";
  /** Not a WindowMetrics level: the namespace windows and their own topic (NamespaceMetrics). */
  public static final String NAMESPACE = "NAMESPACE";

  /** PROCESS, GROUP, POD or HOST (names of the WindowMetrics MetricsLevel enum), or NAMESPACE. */
  public String level;
  public String hostId;
  /** See WindowMetrics.entityId: Process node id, group id, pod UID or host id; NAMESPACE: the namespace. */
  public String entityId;
  public String groupId;
  public String podUid;
  /** Pod name, namespace, labels of a PROCESS, GROUP or POD sample; null when unknown. */
  public PodMetadata pod;
  public String comm;
  public long intervalEndNs;
  public long intervalNs;
  public long cpuTimeNs;
  public double energyJoules;
  public double idleEnergyJoules;
  public boolean measured;
  public int threads;
  public int processes;
  /** CPUs online on the host; 0 = unknown. */
  public int hostCores;
  /** The sample's {@code RecordIds} (0 = none; transactions are deduplicated before the windows). */
  public long recordId;
  /** Set for a TransactionStats input (then no ResourceSample fields count); null for a sample. */
  public Transaction transaction;
  /**
   * Set instead of {@link #transaction} for TransactionStats inputs of one key and window combined
   * ahead of the windows ({@code TransactionInputCombiner}): their exactly merged totals.
   */
  public TransactionTotals transactions;
  /** The HTTP routes of those combined inputs (null for NAMESPACE, whose windows keep none). */
  public HttpRouteTotals httpRoutes;

  public MetricInput() {}

  /** The window key: entity ids are only unique per level, and the host group "host" per host. */
  public String key() {
    return level + "|" + hostId + "|" + entityId;
  }

  public boolean isNamespace() {
    return NAMESPACE.equals(level);
  }

  /** A TransactionStats input, one record or combined ones (no ResourceSample fields count). */
  public boolean isTransactions() {
    return transaction != null || transactions != null;
  }

  /** The TransactionStats records this input stands for: 0 for a sample. */
  public int transactionRecords() {
    return transaction != null ? 1 : transactions != null ? transactions.records : 0;
  }

  public static MetricInput of(Sample s, String level, String entityId) {
    if (level.equals(NAMESPACE)) {
      return ofNamespace(s, entityId);
    }
    MetricInput m = new MetricInput();
    m.level = level;
    m.hostId = s.hostId;
    m.entityId = entityId;
    m.groupId = level.equals(PROCESS) || level.equals(GROUP) ? s.groupId : null;
    // PROCESS inputs carry their pod too: ProcessGroups learns the process's pod from them (the
    // PROCESS result does not show it, see EntityWindowFunction).
    m.podUid = level.equals(HOST) ? null : s.podUid;
    m.pod = level.equals(HOST) ? null : s.pod;
    m.comm = level.equals(PROCESS) ? s.comm : null;
    m.intervalEndNs = s.intervalEndNs;
    m.intervalNs = s.intervalNs();
    m.cpuTimeNs = s.cpuTimeNs;
    m.energyJoules = s.energyJoules;
    m.idleEnergyJoules = level.equals(HOST) ? s.idlePowerWatts * s.intervalNs() / 1e9 : 0;
    m.measured = s.measured;
    m.threads = s.threads;
    m.processes = s.processes;
    m.hostCores = s.hostCores;
    m.recordId = s.recordId;
    return m;
  }

  /**
   * A pod's GROUP record as input of its namespace: CPU and energy, and the host, container and pod
   * it came from (counted per window); no threads, cores or pod metadata (not summable over hosts).
   */
  private static MetricInput ofNamespace(Sample s, String namespace) {
    MetricInput m = new MetricInput();
    m.level = NAMESPACE;
    m.hostId = s.hostId;
    m.entityId = namespace;
    m.groupId = s.groupId;
    m.podUid = s.podUid;
    m.intervalEndNs = s.intervalEndNs;
    m.intervalNs = s.intervalNs();
    m.cpuTimeNs = s.cpuTimeNs;
    m.energyJoules = s.energyJoules;
    m.measured = s.measured;
    m.recordId = s.recordId;
    return m;
  }

  /** A TransactionStats record as input of one window key (group and pod as far as known). */
  public static MetricInput ofTransaction(Transaction t, String level, String entityId, String groupId, String podUid) {
    MetricInput m = new MetricInput();
    m.level = level;
    m.hostId = t.hostId;
    m.entityId = entityId;
    m.groupId = level.equals(PROCESS) || level.equals(GROUP) || level.equals(NAMESPACE) ? groupId : null;
    m.podUid = level.equals(GROUP) || level.equals(POD) || level.equals(NAMESPACE) ? podUid : null;
    m.comm = level.equals(PROCESS) ? t.comm : null;
    m.intervalEndNs = t.intervalEndNs;
    m.intervalNs = t.intervalEndNs - t.intervalStartNs;
    m.transaction = t;
    return m;
  }

  @Override
  public String toString() {
    return "MetricInput{" + key() + " @" + intervalEndNs
        + (transaction != null ? " " + transaction
            : transactions != null ? " " + transactions.records + " transaction records combined"
            : " cpu=" + cpuTimeNs + " e=" + energyJoules) + "}";
  }
}
