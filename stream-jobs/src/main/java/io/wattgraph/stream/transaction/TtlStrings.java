package io.wattgraph.stream.transaction;

import java.time.Duration;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;

/** A keyed string remembered for a retention renewed on every read and write (names of a process). */
final class TtlStrings {
  private TtlStrings() {}

  /** The state's name is what checkpoints know it by: never change it for an existing state. */
  static ValueState<String> state(RuntimeContext context, String name, long retentionMs) {
    ValueStateDescriptor<String> d = new ValueStateDescriptor<>(name, Types.STRING);
    d.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(retentionMs)).updateTtlOnReadAndWrite().build());
    return context.getState(d);
  }
}
