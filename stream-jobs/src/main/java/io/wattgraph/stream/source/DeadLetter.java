package io.wattgraph.stream.source;

/**
 * A source record the job cannot use (undecodable, unknown schema fingerprint, invalid field
 * values), with why and where it came from. Written unchanged to the dead-letter topic by
 * {@code DeadLetterSerializer}; the job goes on.
 */
public class DeadLetter {
  public String reason;
  public String topic;
  public int partition;
  public long offset;
  public long timestamp;
  /** The original key and value bytes, untouched (either may be null). */
  public byte[] key;
  public byte[] value;

  public DeadLetter() {}

  static DeadLetter of(org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> r, String reason) {
    DeadLetter d = new DeadLetter();
    d.reason = reason;
    d.topic = r.topic();
    d.partition = r.partition();
    d.offset = r.offset();
    d.timestamp = r.timestamp();
    d.key = r.key();
    d.value = r.value();
    return d;
  }

  @Override
  public String toString() {
    return "DeadLetter{" + topic + "-" + partition + "@" + offset + ": " + reason + "}";
  }
}
