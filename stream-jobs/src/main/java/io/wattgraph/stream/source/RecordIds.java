package io.wattgraph.stream.source;

import org.apache.commons.codec.digest.MurmurHash3;

/**
 * The id of an agent record: a 64-bit hash of its Kafka value bytes. The agents deliver at least
 * once (after a crash their disk spool sends again what Kafka had not confirmed), and a record sent
 * again is byte for byte the one sent before; two different records with the same bytes would be
 * the same socket or entity over the same interval, i.e. the same record. 0 = no id (not deduplicated).
 */
public final class RecordIds {
  private RecordIds() {}

  public static long of(byte[] value) {
    long id = MurmurHash3.hash128x64(value)[0];
    return id == 0 ? 1 : id;
  }
}
