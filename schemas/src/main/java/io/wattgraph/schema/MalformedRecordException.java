package io.wattgraph.schema;

import java.io.IOException;

/** A single-object record's body does not decode; the message says what, where, and of which writer schema. */
public final class MalformedRecordException extends IOException {
  private static final long serialVersionUID = 1L;

  MalformedRecordException(String message, Throwable cause) {
    super(message, cause);
  }
}
