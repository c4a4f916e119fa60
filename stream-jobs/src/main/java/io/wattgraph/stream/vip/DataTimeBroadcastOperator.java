package io.wattgraph.stream.vip;

import java.util.List;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.functions.co.KeyedBroadcastProcessFunction;
import org.apache.flink.streaming.api.operators.co.CoBroadcastWithKeyedOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;

/**
 * The keyed broadcast operator ({@code BroadcastConnectedStream.process} makes the same one) with
 * the event time of its data input alone: the broadcast input's watermarks and idleness are ignored.
 *
 * <p>Why: the broadcast side (service mappings) has no event time, and a two-input operator's
 * watermark is the minimum over its active inputs. Without a watermark the broadcast side holds the
 * data back for ever; given the end of time instead (what the transaction path did), it becomes the
 * operator's watermark as soon as the data input goes idle: Long.MAX_VALUE, after which every record
 * of the data input is late. Here the broadcast input counts as idle from the start and never moves:
 * the operator's watermark is the data input's while that is active, and the operator is idle while
 * it is idle (an all-idle combination keeps the highest watermark seen, the data input's own).
 * Timers, state and the function are the base operator's, so checkpoints of either restore into the
 * other.
 */
public class DataTimeBroadcastOperator<K, IN1, IN2, OUT> extends CoBroadcastWithKeyedOperator<K, IN1, IN2, OUT> {
  private static final long serialVersionUID = 1L;
  private static final int BROADCAST_INPUT = 1;

  public DataTimeBroadcastOperator(KeyedBroadcastProcessFunction<K, IN1, IN2, OUT> function,
      List<MapStateDescriptor<?, ?>> broadcastStateDescriptors) {
    super(function, broadcastStateDescriptors);
  }

  /**
   * {@code data} keyed, connected to {@code control} broadcast with these states, processed by
   * {@code function} in event time of {@code data} only.
   */
  public static <K, IN1, IN2, OUT> SingleOutputStreamOperator<OUT> connect(KeyedStream<IN1, K> data,
      DataStream<IN2> control, KeyedBroadcastProcessFunction<K, IN1, IN2, OUT> function,
      TypeInformation<OUT> outType, String name, List<MapStateDescriptor<?, ?>> broadcastStates) {
    return data.connect(control.broadcast())
        .transform(name, outType, new DataTimeBroadcastOperator<>(function, broadcastStates));
  }

  @Override
  public void open() throws Exception {
    super.open();
    // Idle at Long.MIN_VALUE: never the minimum of the active inputs, never above the data's watermark.
    super.processWatermarkStatus(WatermarkStatus.IDLE, BROADCAST_INPUT);
  }

  @Override
  public void processWatermark2(Watermark mark) {
    // no event time on the broadcast side
  }

  @Override
  public void processWatermark2(WatermarkEvent watermark) {
    // nor generalized watermarks
  }

  @Override
  protected void processWatermarkStatus(WatermarkStatus status, int index) throws Exception {
    if (index != BROADCAST_INPUT) {
      super.processWatermarkStatus(status, index);
    }
  }
}
