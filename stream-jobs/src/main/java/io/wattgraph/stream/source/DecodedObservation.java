package io.wattgraph.stream.source;

/** What the Kafka deserializer yields per record: an observation, or a dead letter. */
public class DecodedObservation implements DecodedRecord<Observation> {
  public Observation observation;
  public DeadLetter deadLetter;

  public DecodedObservation() {}

  static DecodedObservation ok(Observation o) {
    DecodedObservation d = new DecodedObservation();
    d.observation = o;
    return d;
  }

  static DecodedObservation dead(DeadLetter l) {
    DecodedObservation d = new DecodedObservation();
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
