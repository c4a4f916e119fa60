package io.wattgraph.stream.source;

/** A deserializer's result per Kafka record: the value, or (value null) the dead letter. */
interface DecodedRecord<T> {
  T value();

  DeadLetter deadLetter();
}
