package io.wattgraph.stream.sink.neo4j;

import java.io.Serializable;
import java.util.concurrent.TimeUnit;
import org.neo4j.driver.AuthToken;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Config;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Logging;

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
  /** How long (processing time) a row with nowhere to go yet is offered again before it is dropped. */
  public final long waitMs;
  /** A row is written once the checkpoint after it completed (Neo4jSinkWriter); false: as it comes. */
  public final boolean writesAfterCheckpoints;

  /** The job's default of {@code --edge-wait-ms}. */
  public static final long DEFAULT_WAIT_MS = 60_000;

  public Neo4jSettings(String uri, String user, String password, int batchSize, long flushIntervalMs) {
    this(uri, user, password, batchSize, flushIntervalMs, 30_000, DEFAULT_WAIT_MS, false);
  }

  public Neo4jSettings(String uri, String user, String password, int batchSize, long flushIntervalMs,
      long driverRetryMs, long waitMs, boolean writesAfterCheckpoints) {
    this.writesAfterCheckpoints = writesAfterCheckpoints;
    this.driverRetryMs = driverRetryMs;
    this.waitMs = waitMs;
    this.uri = uri;
    this.user = user;
    this.password = password;
    this.batchSize = batchSize;
    this.flushIntervalMs = flushIntervalMs;
  }

  /** These settings with rows written once their checkpoint completed, or as they come. */
  public Neo4jSettings withWritesAfterCheckpoints(boolean afterCheckpoints) {
    return new Neo4jSettings(uri, user, password, batchSize, flushIntervalMs, driverRetryMs, waitMs, afterCheckpoints);
  }

  /** A driver for these settings; every writer of the job builds its own this way. */
  public Driver driver() {
    AuthToken auth = user == null ? AuthTokens.none() : AuthTokens.basic(user, password == null ? "" : password);
    Config config = Config.builder()
        .withLogging(Logging.slf4j())
        .withMaxTransactionRetryTime(driverRetryMs, TimeUnit.MILLISECONDS)
        .build();
    return GraphDatabase.driver(uri, auth, config);
  }

  @Override
  public String toString() {
    // Never the password.
    return "Neo4jSettings{uri=" + uri + ", user=" + user + ", batchSize=" + batchSize
        + ", flushIntervalMs=" + flushIntervalMs + ", waitMs=" + waitMs + ", writesAfterCheckpoints="
        + writesAfterCheckpoints + "}";
  }
}
