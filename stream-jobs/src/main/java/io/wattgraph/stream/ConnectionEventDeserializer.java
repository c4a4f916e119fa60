package io.wattgraph.stream;

import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.WattgraphSchemas;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka value (Avro single-object encoding) to {@link Observation}.
 *
 * <p>A record that does not decode is logged, counted ({@code undecodableRecords}) and dropped:
 * failing the job would make it restart on the same poison record forever.
 */
public class ConnectionEventDeserializer implements KafkaRecordDeserializationSchema<Observation> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionEventDeserializer.class);

  // Not serializable, so built on each task in open().
  private transient BinaryMessageDecoder<ConnectionEvent> decoder;
  private transient Counter undecodable;

  @Override
  public void open(DeserializationSchema.InitializationContext context) {
    decoder = WattgraphSchemas.connectionEventDecoder();
    undecodable = context.getMetricGroup().counter("undecodableRecords");
  }

  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Observation> out) {
    if (decoder == null) {
      decoder = WattgraphSchemas.connectionEventDecoder();
    }
    Observation o;
    try {
      if (record.value() == null) {
        throw new IllegalArgumentException("null value");
      }
      o = toObservation(decoder.decode(record.value()));
    } catch (Exception e) {
      if (undecodable != null) {
        undecodable.inc();
      }
      LOG.warn("Dropping undecodable record {}-{}@{}: {}", record.topic(), record.partition(),
          record.offset(), e.toString());
      return;
    }
    out.collect(o);
  }

  /** Field-by-field copy; addresses become text so keys are readable in the graph. */
  public static Observation toObservation(ConnectionEvent e) {
    Observation o = new Observation();
    o.hostId = e.getHostId();
    o.eventTimeNs = e.getEventTimeNs();
    o.closed = e.getKind() == ConnectionEventKind.CLOSED;
    o.localIp = IpAddresses.format(e.getLocalAddress());
    o.localPort = e.getLocalPort();
    o.remoteIp = IpAddresses.format(e.getRemoteAddress());
    o.remotePort = e.getRemotePort();
    o.role = Role.valueOf(e.getRole().name());
    o.tgid = e.getTgid();
    o.processStartTimeNs = e.getProcessStartTimeNs();
    o.comm = e.getComm();
    o.cmdline = e.getCmdline();
    o.cgroupId = e.getCgroupId();
    o.containerId = e.getContainerId();
    o.socketCookie = e.getSocketCookie();
    o.bytesSent = e.getBytesSent();
    o.bytesReceived = e.getBytesReceived();
    return o;
  }

  @Override
  public TypeInformation<Observation> getProducedType() {
    return TypeInformation.of(Observation.class);
  }
}
