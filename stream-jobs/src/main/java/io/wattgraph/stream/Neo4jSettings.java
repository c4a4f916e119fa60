package io.wattgraph.stream;

import java.io.Serializable;

/** Where and how the sink writes; shipped to the task managers with the job. */
public class Neo4jSettings implements Serializable {
  private static final long serialVersionUID = 1L;

  public final String uri;
  /** null (with a null password) means no authentication. */
  public final String user;
  public final String password;
  public final int batchSize;
  public final long flushIntervalMs;
  /** How long the driver retries one transaction before the sink's own backoff loop takes over. */
  public final long driverRetryMs;

  public Neo4jSettings(String uri, String user, String password, int batchSize, long flushIntervalMs) {
    this(uri, user, password, batchSize, flushIntervalMs, 30_000);
  }

  public Neo4jSettings(String uri, String user, String password, int batchSize, long flushIntervalMs,
      long driverRetryMs) {
    this.driverRetryMs = driverRetryMs;
    this.uri = uri;
    this.user = user;
    this.password = password;
    this.batchSize = batchSize;
    this.flushIntervalMs = flushIntervalMs;
  }

  @Override
  public String toString() {
    // Never the password.
    return "Neo4jSettings{uri=" + uri + ", user=" + user + ", batchSize=" + batchSize
        + ", flushIntervalMs=" + flushIntervalMs + "}";
  }
}
