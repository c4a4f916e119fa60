package io.wattgraph.stream.source;

import io.wattgraph.schema.PowerSource;
import io.wattgraph.schema.RecordDecoder;
import io.wattgraph.schema.ResourceSample;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.PodMetadata;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka value ({@code ResourceSample}, Avro single-object encoding) to {@link Sample}, validated.
 * What does not decode or is invalid becomes a {@link DeadLetter} (same DLQ as connection events).
 */
public class ResourceSampleDeserializer implements KafkaRecordDeserializationSchema<DecodedSample> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(ResourceSampleDeserializer.class);

  private transient RecordDecoder<ResourceSample> decoder;
  private transient Counter deadLetters;

  @Override
  public void open(DeserializationSchema.InitializationContext context) {
    decoder = WattgraphSchemas.recordDecoder(ResourceSample.getClassSchema());
    deadLetters = context.getMetricGroup().counter("resourceDeadLetters");
  }

  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<DecodedSample> out) {
    if (decoder == null) {
      decoder = WattgraphSchemas.recordDecoder(ResourceSample.getClassSchema());
    }
    String reason;
    Sample sample = null;
    try {
      if (record.value() == null) {
        reason = "undecodable: null value";
      } else {
        ResourceSample r = decoder.decode(record.value());
        reason = invalidReason(r);
        if (reason == null) {
          sample = toSample(r);
          sample.recordId = RecordIds.of(record.value());
        }
      }
    } catch (Exception e) {
      reason = "undecodable: " + e;
    }
    if (sample != null) {
      // Outside the try: an exception of a chained downstream operator must fail the task, not
      // turn a good record into a dead letter.
      out.collect(DecodedSample.ok(sample));
      return;
    }
    if (deadLetters != null) {
      deadLetters.inc();
    }
    LOG.warn("Dead letter {}-{}@{}: {}", record.topic(), record.partition(), record.offset(), reason);
    out.collect(DecodedSample.dead(DeadLetter.of(record, reason)));
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
  public TypeInformation<DecodedSample> getProducedType() {
    return TypeInformation.of(DecodedSample.class);
  }
}
