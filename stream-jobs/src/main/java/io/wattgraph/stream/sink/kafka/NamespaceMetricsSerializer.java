package io.wattgraph.stream.sink.kafka;

import io.wattgraph.schema.NamespaceMetrics;
import io.wattgraph.schema.NamespacePowerSource;
import io.wattgraph.schema.WattgraphSchemas;
import io.wattgraph.stream.window.MetricInput;
import io.wattgraph.stream.window.MetricsRow;

/**
 * A NAMESPACE window result as a record of the namespace metrics topic: key the UTF-8 namespace
 * (all windows and revisions of a namespace on one partition, in order), value
 * {@code NamespaceMetrics} in Avro single-object encoding, timestamp the window end (ms).
 */
public class NamespaceMetricsSerializer extends WindowResultSerializer<MetricsRow, NamespaceMetrics> {
  private static final long serialVersionUID = 1L;

  public NamespaceMetricsSerializer(String topic) {
    super(topic, WattgraphSchemas::namespaceMetricsEncoder, NamespaceMetricsSerializer::toAvro, r -> r.entityId,
        r -> r.windowEndNs);
  }

  public static NamespaceMetrics toAvro(MetricsRow r) {
    if (!MetricInput.NAMESPACE.equals(r.level)) {
      throw new IllegalArgumentException("not a namespace row: " + r);
    }
    NamespaceMetrics.Builder b = NamespaceMetrics.newBuilder()
        .setNamespace(r.entityId)
        .setWindowStartNs(r.windowStartNs)
        .setWindowEndNs(r.windowEndNs)
        .setRevision(r.revision)
        .setHosts(r.hosts)
        .setPods(r.pods)
        .setContainers(r.containers)
        .setSamples(r.samples)
        .setCpuSeconds(r.cpuSeconds)
        .setCpuCores(r.cpuCores)
        .setEnergyJoules(r.energyJoules)
        .setPowerWatts(r.powerWatts)
        .setPowerSource(NamespacePowerSource.valueOf(r.powerSource));
    return putTransactions(b.build(), r);
  }
}
