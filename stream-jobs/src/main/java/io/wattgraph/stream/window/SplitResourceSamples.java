package io.wattgraph.stream.window;

import io.wattgraph.stream.source.Decoded;
import io.wattgraph.stream.source.Sample;
import io.wattgraph.stream.source.SplitDeadLetters;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Valid samples become window inputs (a GROUP record with a pod UID feeds both its group and its
 * pod, and its namespace when the record names one); dead letters go to
 * {@link SplitDeadLetters#DEAD_LETTERS}. Timestamps pass through.
 */
public class SplitResourceSamples extends ProcessFunction<Decoded<Sample>, MetricInput> {
  private static final long serialVersionUID = 1L;

  @Override
  public void processElement(Decoded<Sample> d, Context ctx, Collector<MetricInput> out) {
    if (d.value == null) {
      ctx.output(SplitDeadLetters.DEAD_LETTERS, d.deadLetter);
      return;
    }
    Sample s = d.value;
    switch (s.scope) {
      case "PROCESS" -> out.collect(MetricInput.of(s, MetricInput.PROCESS,
          s.hostId + "/" + s.tgid + "/" + s.processStartTimeNs));
      case "GROUP" -> {
        out.collect(MetricInput.of(s, MetricInput.GROUP, s.groupId));
        if (s.podUid != null && !s.podUid.isBlank()) {
          out.collect(MetricInput.of(s, MetricInput.POD, s.podUid));
        }
        String namespace = s.pod == null ? null : s.pod.namespace;
        if (namespace != null && !namespace.isBlank()) {
          out.collect(MetricInput.of(s, MetricInput.NAMESPACE, namespace));
        }
      }
      default -> out.collect(MetricInput.of(s, MetricInput.HOST, s.hostId));
    }
  }
}
