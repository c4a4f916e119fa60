package io.wattgraph.stream.source;

import java.util.function.ToLongFunction;

/**
 * What a deserializer yields per Kafka record: the value, or (value null) the {@link DeadLetter} naming why.
 * A POJO for Flink: each deserializer gives its concrete type ({@code TypeHint<Decoded<Sample>>}).
 */
public class Decoded<T> {
  public T value;
  public DeadLetter deadLetter;

  public Decoded() {}

  public static <T> Decoded<T> ok(T value) {
    Decoded<T> d = new Decoded<>();
    d.value = value;
    return d;
  }

  public static <T> Decoded<T> dead(DeadLetter deadLetter) {
    Decoded<T> d = new Decoded<>();
    d.deadLetter = deadLetter;
    return d;
  }

  /** The value's event time in ms, for a watermark strategy; a dead letter's is Long.MIN_VALUE (it does not move it). */
  public long eventTimeMs(ToLongFunction<? super T> eventTimeMs) {
    return value == null ? Long.MIN_VALUE : eventTimeMs.applyAsLong(value);
  }
}
