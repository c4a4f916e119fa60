package io.wattgraph.stream.source;

/** What the CgroupStats deserializer yields per Kafka record: a valid sample, or a dead letter. */
public class DecodedCgroup implements DecodedRecord<CgroupSample> {
  public CgroupSample sample;
  public DeadLetter deadLetter;

  public DecodedCgroup() {}

  public static DecodedCgroup ok(CgroupSample s) {
    DecodedCgroup d = new DecodedCgroup();
    d.sample = s;
    return d;
  }

  static DecodedCgroup dead(DeadLetter l) {
    DecodedCgroup d = new DecodedCgroup();
    d.deadLetter = l;
    return d;
  }

  @Override
  public CgroupSample value() {
    return sample;
  }

  @Override
  public DeadLetter deadLetter() {
    return deadLetter;
  }

  /** Event time in ms, for the watermark strategy (dead letters do not move it). */
  public long eventTimeMs() {
    return sample == null ? Long.MIN_VALUE : sample.eventTimeMs();
  }
}
