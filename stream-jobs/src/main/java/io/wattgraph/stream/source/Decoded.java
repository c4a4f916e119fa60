package io.wattgraph.stream.source;

/** What the Kafka deserializer yields per record: an observation, or a dead letter. */
public class Decoded implements DecodedRecord<Observation> {
  public Observation observation;
  public DeadLetter deadLetter;

  public Decoded() {}

  static Decoded ok(Observation o) {
    Decoded d = new Decoded();
    d.observation = o;
    return d;
  }

  static Decoded dead(DeadLetter l) {
    Decoded d = new Decoded();
    d.deadLetter = l;
    return d;
  }

  @Override
  public Observation value() {
    return observation;
  }

  @Override
  public DeadLetter deadLetter() {
    return deadLetter;
  }
}
