package io.wattgraph.stream.source;

import io.wattgraph.schema.ConnectionEvent;
import io.wattgraph.schema.ConnectionEventKind;
import io.wattgraph.schema.ConnectionNat;
import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.RecordDecoder;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.Role;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka value (Avro single-object encoding) to {@link Observation}, validated.
 *
 * <p>A record that does not decode (garbage, unknown schema fingerprint) or carries invalid values
 * (see {@link #invalidReason}) becomes a {@link DeadLetter} with the reason, counted
 * ({@code deadLetters}): failing the job would make it restart on the same poison record forever.
 */
public class ConnectionEventDeserializer implements KafkaRecordDeserializationSchema<Decoded<Observation>> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionEventDeserializer.class);

  // Not serializable, so built on each task in open().
  private transient RecordDecoder<ConnectionEvent> decoder;
  private transient Counter undecodable;

  @Override
  public void open(DeserializationSchema.InitializationContext context) {
    decoder = WattgraphSchemas.recordDecoder(ConnectionEvent.getClassSchema());
    undecodable = context.getMetricGroup().counter("deadLetters");
  }

  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Decoded<Observation>> out) {
    if (decoder == null) {
      decoder = WattgraphSchemas.recordDecoder(ConnectionEvent.getClassSchema());
    }
    String reason;
    Observation observation = null;
    try {
      if (record.value() == null) {
        reason = "undecodable: null value";
      } else {
        ConnectionEvent e = decoder.decode(record.value());
        reason = invalidReason(e);
        if (reason == null) {
          observation = toObservation(e);
        }
      }
    } catch (Exception e) {
      reason = "undecodable: " + e;
    }
    if (observation != null) {
      // Outside the try: an exception of a chained downstream operator (the collector pushes the
      // record through them) must fail the task, not turn a good record into a dead letter.
      out.collect(Decoded.ok(observation));
      return;
    }
    if (undecodable != null) {
      undecodable.inc();
    }
    LOG.warn("Dead letter {}-{}@{}: {}", record.topic(), record.partition(), record.offset(), reason);
    out.collect(Decoded.dead(DeadLetter.of(record, reason)));
  }

  /** Why a decoded event cannot be used, or null when it can. */
  static String invalidReason(ConnectionEvent e) {
    if (e.getHostId() == null || e.getHostId().isBlank()) {
      return "invalid: empty hostId";
    }
    if (e.getLocalAddress() == null || e.getRemoteAddress() == null) {
      return "invalid: missing address";
    }
    if (e.getLocalPort() < 0 || e.getLocalPort() > 65535) {
      return "invalid: localPort " + e.getLocalPort() + " out of range 0..65535";
    }
    if (e.getRemotePort() < 0 || e.getRemotePort() > 65535) {
      return "invalid: remotePort " + e.getRemotePort() + " out of range 0..65535";
    }
    if (e.getBytesSent() < 0 || e.getBytesReceived() < 0) {
      return "invalid: negative byte counter (sent " + e.getBytesSent() + ", received " + e.getBytesReceived() + ")";
    }
    if (e.getEventTimeNs() < 0) {
      return "invalid: negative eventTimeNs " + e.getEventTimeNs();
    }
    if (e.getTgid() < 0) {
      return "invalid: negative tgid " + e.getTgid();
    }
    double p = e.getKeepProbability();
    if (!(p >= 0 && p <= 1)) {
      return "invalid: keepProbability " + p + " outside 0..1";
    }
    ConnectionNat n = e.getNat();
    return n == null ? null : natReason(n.getLocalAddress(), n.getLocalPort(), n.getRemoteAddress(), n.getRemotePort());
  }

  /** Why a record's NAT tuple (ConnectionEvent v2, TransactionStats v4) cannot be used, or null. */
  static String natReason(Object localAddress, int localPort, Object remoteAddress, int remotePort) {
    if (localAddress == null) {
      return "invalid: missing nat.localAddress";
    }
    if (remoteAddress == null) {
      return "invalid: missing nat.remoteAddress";
    }
    if (localPort < 0 || localPort > 65535) {
      return "invalid: nat.localPort " + localPort + " out of range 0..65535";
    }
    if (remotePort < 0 || remotePort > 65535) {
      return "invalid: nat.remotePort " + remotePort + " out of range 0..65535";
    }
    return null;
  }

  /**
   * Field-by-field copy; addresses become text so keys are readable in the graph. With {@code nat}
   * (ConnectionEvent v2) the endpoints are the translated ones, as the peer reports them, so both
   * ends of a connection through DNAT/SNAT share one connection key.
   */
  public static Observation toObservation(ConnectionEvent e) {
    Observation o = new Observation();
    o.hostId = e.getHostId();
    o.eventTimeNs = e.getEventTimeNs();
    o.closed = e.getKind() == ConnectionEventKind.CLOSED;
    ConnectionNat nat = e.getNat();
    o.localIp = IpAddresses.format(nat == null ? e.getLocalAddress() : nat.getLocalAddress());
    o.localPort = nat == null ? e.getLocalPort() : nat.getLocalPort();
    o.remoteIp = IpAddresses.format(nat == null ? e.getRemoteAddress() : nat.getRemoteAddress());
    o.remotePort = nat == null ? e.getRemotePort() : nat.getRemotePort();
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
    o.keepProbability = e.getKeepProbability();
    return o;
  }

  @Override
  public TypeInformation<Decoded<Observation>> getProducedType() {
    return TypeInformation.of(new TypeHint<Decoded<Observation>>() {});
  }
}
