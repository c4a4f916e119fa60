package io.wattgraph.stream.source;

import io.wattgraph.stream.PodMetadata;

/** The fields of a {@code ResourceSample} the windows use (a Flink POJO, no Avro on the wire). */
public class Sample {
  /** HOST, GROUP or PROCESS. */
  public String scope;
  public String hostId;
  public long intervalStartNs;
  public long intervalEndNs;
  public int tgid;
  public long processStartTimeNs;
  public String comm;
  public String groupId;
  public String podUid;
  /** Pod name, namespace, labels (ResourceSample v3); null when the record has none. */
  public PodMetadata pod;
  public int threads;
  public int processes;
  /** CPUs online on the host (ResourceSample v2); 0 = unknown (v1 agents). */
  public int hostCores;
  public long cpuTimeNs;
  public boolean measured;
  public double energyJoules;
  /** HOST: idle power; 0 otherwise. */
  public double idlePowerWatts;
  /** {@link RecordIds} of the Kafka record (0 = none): the agents' replayed duplicates are dropped. */
  public long recordId;

  public Sample() {}

  /**
   * Event time in ms: the interval end, minus 1 ns so that an interval ending exactly on a window
   * boundary belongs to the window it ends, not to the next one.
   */
  public long eventTimeMs() {
    return Math.floorDiv(intervalEndNs - 1, 1_000_000L);
  }

  public long intervalNs() {
    return intervalEndNs - intervalStartNs;
  }
}
