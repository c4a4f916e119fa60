package io.wattgraph.stream;

/**
 * One sample as input of one window key: a PROCESS record feeds its process, a GROUP record its
 * group and (with a pod UID) its pod, a HOST record its host. Or one TransactionStats record
 * ({@link #transaction} set, the resource fields zero) as input of its process, its group and pod
 * (when {@link ProcessGroups} knows them) and its host.
 */
public class MetricInput {
  public static final String PROCESS = "PROCESS";
  public static final String GROUP = "GROUP";
  public static final String POD = "POD";
  public static final String HOST = "HOST";

  /** PROCESS, GROUP, POD or HOST (names of the WindowMetrics MetricsLevel enum). */
  public String level;
  public String hostId;
  /** See WindowMetrics.entityId: Process node id, group id, pod UID or host id. */
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
  /** Set for a TransactionStats input (then no ResourceSample fields count); null for a sample. */
  public Transaction transaction;

  public MetricInput() {}

  /** The window key: entity ids are only unique per level, and the host group "host" per host. */
  public String key() {
    return level + "|" + hostId + "|" + entityId;
  }

  static MetricInput of(Sample s, String level, String entityId) {
    MetricInput m = new MetricInput();
    m.level = level;
    m.hostId = s.hostId;
    m.entityId = entityId;
    m.groupId = level.equals(PROCESS) || level.equals(GROUP) ? s.groupId : null;
    // PROCESS inputs carry their pod too: ProcessGroups learns the process's pod from them (the
    // PROCESS result does not show it, see MetricsWindowFunction).
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
    return m;
  }

  /** A TransactionStats record as input of one window key (group and pod as far as known). */
  static MetricInput ofTransaction(Transaction t, String level, String entityId, String groupId, String podUid) {
    MetricInput m = new MetricInput();
    m.level = level;
    m.hostId = t.hostId;
    m.entityId = entityId;
    m.groupId = level.equals(PROCESS) || level.equals(GROUP) ? groupId : null;
    m.podUid = level.equals(GROUP) || level.equals(POD) ? podUid : null;
    m.comm = level.equals(PROCESS) ? t.comm : null;
    m.intervalEndNs = t.intervalEndNs;
    m.intervalNs = t.intervalEndNs - t.intervalStartNs;
    m.transaction = t;
    return m;
  }

  @Override
  public String toString() {
    return "MetricInput{" + key() + " @" + intervalEndNs
        + (transaction != null ? " " + transaction : " cpu=" + cpuTimeNs + " e=" + energyJoules) + "}";
  }
}
