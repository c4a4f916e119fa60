package io.wattgraph.stream;

import io.wattgraph.stream.source.Endpoints;
import io.wattgraph.stream.typeinfo.RecordTypeInfoFactory;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.PojoField;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;

/**
 * The fields of a {@code TransactionStats} record the job uses (a Flink POJO, no Avro on the wire):
 * one connection end's transactions over one agent interval, with its latency histogram (client
 * round trips for a CLIENT record, server times for a SERVER record) as parallel sorted arrays.
 * Between tasks it has a hand-written serializer ({@code TransactionSerializer}); in operator state
 * (records waiting for their process's group, their peer or their VIP's backend) it keeps the
 * POJO format it always had, {@link #STATE_TYPE}, so state written before stays readable.
 */
@TypeInfo(RecordTypeInfoFactory.class)
public class Transaction {
  /** Flink's POJO type of this class, field by field as the type extractor made it before the annotation. */
  public static final TypeInformation<Transaction> STATE_TYPE = pojoType();

  public String hostId;
  public long intervalStartNs;
  public long intervalEndNs;
  /** CLIENT or SERVER. */
  public String role;
  public String localIp;
  public int localPort;
  public String remoteIp;
  public int remotePort;
  public int tgid;
  public long processStartTimeNs;
  public String comm;
  public boolean closed;
  public long transactions;
  public long requestBytes;
  public long responseBytes;
  public int subBucketBits;
  /** The record's own histogram (by role): bucket indexes, strictly ascending. */
  public int[] buckets = new int[0];
  public long[] counts = new long[0];
  /** The HTTP/1.x part of the transactions per route (TransactionStats v2), of this record's role. */
  public HttpRoute[] httpRoutes = new HttpRoute[0];
  /** {@code RecordIds} of the Kafka record (0 = none): the agents' replayed duplicates are dropped. */
  public long recordId;

  public Transaction() {}

  public boolean isClient() {
    return "CLIENT".equals(role);
  }

  /** The graph's Process id of the owning process ({@code hostId/0/0} when no process was seen). */
  public String processId() {
    return tgid == 0 ? hostId + "/0/0" : hostId + "/" + tgid + "/" + processStartTimeNs;
  }

  /** Both ends of a connection share the sorted endpoint pair, as in {@code Observation#connectionKey()}. */
  public String connectionKey() {
    String local = Endpoints.of(localIp, localPort);
    String remote = Endpoints.of(remoteIp, remotePort);
    return Endpoints.compare(localIp, localPort, remoteIp, remotePort) <= 0
        ? local + "|" + remote
        : remote + "|" + local;
  }

  /** Event time in ms: the interval end minus 1 ns, as for ResourceSamples ({@code Sample#eventTimeMs()}). */
  public long eventTimeMs() {
    return Math.floorDiv(intervalEndNs - 1, 1_000_000L);
  }

  @Override
  public String toString() {
    return "Transaction{" + hostId + " " + role + " " + Endpoints.of(localIp, localPort) + "->"
        + Endpoints.of(remoteIp, remotePort) + " tgid=" + tgid + " @" + intervalEndNs + " n=" + transactions
        + (httpRoutes.length == 0 ? "" : " routes=" + java.util.Arrays.toString(httpRoutes)) + "}";
  }

  private static TypeInformation<Transaction> pojoType() {
    List<PojoField> fields = new ArrayList<>();
    for (Field f : Transaction.class.getFields()) {
      if (!Modifier.isStatic(f.getModifiers())) {
        fields.add(new PojoField(f, TypeInformation.of(f.getType())));
      }
    }
    return new PojoTypeInfo<>(Transaction.class, fields);
  }
}
