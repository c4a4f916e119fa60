package io.wattgraph.stream.source;

import io.wattgraph.stream.Transaction;

/** What the TransactionStats deserializer yields per Kafka record: a valid record, or a dead letter. */
public class DecodedTransaction implements DecodedRecord<Transaction> {
  public Transaction transaction;
  public DeadLetter deadLetter;

  public DecodedTransaction() {}

  static DecodedTransaction ok(Transaction t) {
    DecodedTransaction d = new DecodedTransaction();
    d.transaction = t;
    return d;
  }

  static DecodedTransaction dead(DeadLetter l) {
    DecodedTransaction d = new DecodedTransaction();
    d.deadLetter = l;
    return d;
  }

  /** Event time in ms, for the watermark strategy (dead letters do not move it). */
  public long eventTimeMs() {
    return transaction == null ? Long.MIN_VALUE : transaction.eventTimeMs();
  }

  @Override
  public Transaction value() {
    return transaction;
  }

  @Override
  public DeadLetter deadLetter() {
    return deadLetter;
  }
}
