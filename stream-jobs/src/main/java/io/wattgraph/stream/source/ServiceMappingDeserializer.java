package io.wattgraph.stream.source;

import io.wattgraph.schema.IpAddresses;
import io.wattgraph.schema.RecordDecoder;
import io.wattgraph.schema.ServiceBackend;
import io.wattgraph.schema.ServiceMapping;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.ServiceMappingUpdate;
import java.nio.charset.StandardCharsets;
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
 * Records of the compacted service-mappings topic: key {@code vip:port} (IPv6 {@code [v6]:port}),
 * value a {@link ServiceMapping} in single-object encoding, or null (tombstone) to delete.
 * What cannot be used is logged, counted ({@code badServiceMappings}) and becomes a {@link DeadLetter}
 * (the shared DLQ): {@code undecodable:} when the value is not a ServiceMapping, {@code invalid:}
 * when its content cannot be used (not TCP, a port or address out of range, a tombstone without key).
 */
public class ServiceMappingDeserializer implements KafkaRecordDeserializationSchema<Decoded<ServiceMappingUpdate>> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(ServiceMappingDeserializer.class);

  private transient RecordDecoder<ServiceMapping> decoder;
  private transient Counter bad;

  @Override
  public void open(DeserializationSchema.InitializationContext context) {
    decoder = WattgraphSchemas.recordDecoder(ServiceMapping.getClassSchema());
    bad = context.getMetricGroup().counter("badServiceMappings");
  }

  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Decoded<ServiceMappingUpdate>> out) {
    if (decoder == null) {
      decoder = WattgraphSchemas.recordDecoder(ServiceMapping.getClassSchema());
    }
    ServiceMappingUpdate update;
    String reason;
    try {
      update = decode(record.key(), record.value(), decoder);
      reason = null;
    } catch (IllegalArgumentException e) {
      update = null;
      reason = "invalid: " + e.getMessage();
    } catch (Exception e) {
      update = null;
      reason = "undecodable: " + e;
    }
    // Outside the try: a downstream failure must fail the task, not turn a good mapping into a dead letter.
    if (update != null) {
      out.collect(Decoded.ok(update));
      return;
    }
    if (bad != null) {
      bad.inc();
    }
    LOG.warn("Dead letter {}-{}@{}: {}", record.topic(), record.partition(), record.offset(), reason);
    out.collect(Decoded.dead(DeadLetter.of(record, reason)));
  }

  public static ServiceMappingUpdate decode(byte[] key, byte[] value, RecordDecoder<ServiceMapping> decoder)
      throws Exception {
    if (value == null) {
      if (key == null) {
        throw new IllegalArgumentException("tombstone without key");
      }
      return ServiceMappingUpdate.deletion(parseEndpoint(new String(key, StandardCharsets.UTF_8)));
    }
    ServiceMapping m = decoder.decode(value);
    if (!"TCP".equalsIgnoreCase(m.getProtocol())) {
      throw new IllegalArgumentException("protocol " + m.getProtocol() + " is not correlated");
    }
    ServiceMappingUpdate u = new ServiceMappingUpdate();
    u.vipEndpoint = endpoint(m.getVip(), m.getPort());
    u.backends = new String[m.getBackends().size()];
    for (int i = 0; i < u.backends.length; i++) {
      ServiceBackend b = m.getBackends().get(i);
      u.backends[i] = endpoint(b.getAddress(), b.getPort());
    }
    if (m.getService() != null) {
      u.service = (m.getNamespace() == null ? "" : m.getNamespace() + "/") + m.getService();
    }
    return u;
  }

  /** Canonical {@code ip:port} of the job (IPv4-mapped addresses as dotted quads). */
  static String endpoint(String ip, int port) {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port " + port + " out of range");
    }
    return Endpoints.of(IpAddresses.format(IpAddresses.parse(ip)), port);
  }

  /** {@code a.b.c.d:port} or {@code [v6]:port}. */
  public static String parseEndpoint(String text) {
    int colon = text.lastIndexOf(':');
    if (colon <= 0) {
      throw new IllegalArgumentException("key '" + text + "' is not ip:port");
    }
    String ip = text.substring(0, colon);
    if (ip.startsWith("[") && ip.endsWith("]")) {
      ip = ip.substring(1, ip.length() - 1);
    }
    return endpoint(ip, Integer.parseInt(text.substring(colon + 1)));
  }

  @Override
  public TypeInformation<Decoded<ServiceMappingUpdate>> getProducedType() {
    return TypeInformation.of(new TypeHint<Decoded<ServiceMappingUpdate>>() {});
  }
}
