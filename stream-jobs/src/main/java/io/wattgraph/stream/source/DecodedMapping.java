package io.wattgraph.stream.source;

import io.wattgraph.stream.ServiceMappingUpdate;

/** What the service-mapping deserializer yields per Kafka record: an update, or a dead letter. */
public class DecodedMapping implements DecodedRecord<ServiceMappingUpdate> {
  public ServiceMappingUpdate update;
  public DeadLetter deadLetter;

  public DecodedMapping() {}

  static DecodedMapping ok(ServiceMappingUpdate u) {
    DecodedMapping d = new DecodedMapping();
    d.update = u;
    return d;
  }

  static DecodedMapping dead(DeadLetter l) {
    DecodedMapping d = new DecodedMapping();
    d.deadLetter = l;
    return d;
  }

  @Override
  public ServiceMappingUpdate value() {
    return update;
  }

  @Override
  public DeadLetter deadLetter() {
    return deadLetter;
  }
}
