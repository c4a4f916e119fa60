package io.wattgraph.stream.source;

/** What the resource-sample deserializer yields per Kafka record: a valid sample, or a dead letter. */
public class DecodedSample implements DecodedRecord<Sample> {
  public Sample sample;
  public DeadLetter deadLetter;

  public DecodedSample() {}

  public static DecodedSample ok(Sample s) {
    DecodedSample d = new DecodedSample();
    d.sample = s;
    return d;
  }

  static DecodedSample dead(DeadLetter l) {
    DecodedSample d = new DecodedSample();
    d.deadLetter = l;
    return d;
  }

  @Override
  public Sample value() {
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
