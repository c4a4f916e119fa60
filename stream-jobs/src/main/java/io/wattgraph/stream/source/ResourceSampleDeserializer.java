package io.wattgraph.stream.source;

import io.wattgraph.schema.PowerSource;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.stream.PodMetadata;
import org.apache.avro.Schema;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/**
 * Kafka value ({@code ResourceSample}, Avro single-object encoding) to {@link Sample}, validated.
 * What does not decode or is invalid becomes a {@link DeadLetter} (same DLQ as connection events).
 */
public class ResourceSampleDeserializer
    extends AgentRecordDeserializer<ResourceSample, Sample> {
  private static final long serialVersionUID = 1L;

  public ResourceSampleDeserializer() {
    super("resourceDeadLetters");
  }

  @Override
  protected Schema schema() {
    return ResourceSample.getClassSchema();
  }

  @Override
  protected String invalid(ResourceSample r) {
    return invalidReason(r);
  }

  @Override
  protected Sample toValue(ResourceSample r, long recordId) {
    Sample s = toSample(r);
    s.recordId = recordId;
    return s;
  }

  /** Why a decoded sample cannot be used, or null when it can. */
  static String invalidReason(ResourceSample r) {
    if (r.getHostId() == null || r.getHostId().isBlank()) {
      return "invalid: empty hostId";
    }
    if (r.getIntervalStartNs() < 0 || r.getIntervalEndNs() <= r.getIntervalStartNs()) {
      return "invalid: interval " + r.getIntervalStartNs() + ".." + r.getIntervalEndNs() + " is empty or negative";
    }
    if (r.getCpuTimeNs() < 0) {
      return "invalid: negative cpuTimeNs " + r.getCpuTimeNs();
    }
    if (r.getThreads() < 0 || r.getProcesses() < 0) {
      return "invalid: negative count (threads " + r.getThreads() + ", processes " + r.getProcesses() + ")";
    }
    if (!(r.getEnergyJoules() >= 0) || Double.isInfinite(r.getEnergyJoules())) {
      return "invalid: energyJoules " + r.getEnergyJoules();
    }
    if (!(r.getIdlePowerWatts() >= 0) || Double.isInfinite(r.getIdlePowerWatts())) {
      return "invalid: idlePowerWatts " + r.getIdlePowerWatts();
    }
    switch (r.getScope()) {
      case PROCESS -> {
        if (r.getTgid() <= 0) {
          return "invalid: PROCESS record with tgid " + r.getTgid();
        }
      }
      case GROUP -> {
        if (r.getGroupId() == null || r.getGroupId().isBlank()) {
          return "invalid: GROUP record with empty groupId";
        }
      }
      case HOST -> { }
    }
    return null;
  }

  public static Sample toSample(ResourceSample r) {
    Sample s = new Sample();
    s.scope = r.getScope().name();
    s.hostId = r.getHostId();
    s.intervalStartNs = r.getIntervalStartNs();
    s.intervalEndNs = r.getIntervalEndNs();
    s.tgid = r.getTgid();
    s.processStartTimeNs = r.getProcessStartTimeNs();
    s.comm = r.getComm();
    s.groupId = r.getGroupId();
    s.podUid = r.getPodUid();
    s.pod = PodMetadata.of(r.getPodName(), r.getPodNamespace(), r.getPodLabels());
    s.threads = r.getThreads();
    s.processes = r.getProcesses();
    s.hostCores = r.getHostCores() == null ? 0 : r.getHostCores();
    s.cpuTimeNs = r.getCpuTimeNs();
    s.measured = r.getPowerSource() == PowerSource.MEASURED;
    s.energyJoules = r.getEnergyJoules();
    s.idlePowerWatts = r.getIdlePowerWatts();
    return s;
  }

  @Override
  public TypeInformation<Decoded<Sample>> getProducedType() {
    return TypeInformation.of(new TypeHint<Decoded<Sample>>() {});
  }
}
