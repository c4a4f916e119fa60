package io.wattgraph.localstack;

import java.nio.file.Path;
import java.time.Duration;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;

/**
 * A real Neo4j 5 (Community) database with its Bolt connector on loopback, authentication off.
 * Clients reach it only over Bolt, as they would a Neo4j server.
 */
public final class Neo4jServer implements AutoCloseable {

  private final DatabaseManagementService dbms;
  private final int boltPort;

  private Neo4jServer(DatabaseManagementService dbms, int boltPort) {
    this.dbms = dbms;
    this.boltPort = boltPort;
  }

  /** Starts Neo4j with its files under dir; a port of 0 picks a free one. */
  public static Neo4jServer start(Path dir, int boltPort) {
    int port = FreePorts.resolve(boltPort);
    DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(dir.toAbsolutePath())
        .setConfig(BoltConnector.enabled, true)
        .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
        .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
        .setConfig(GraphDatabaseSettings.auth_enabled, false)
        // The default 256 MB transaction-log preallocation per database is wasted on a laptop stack.
        .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
        .setConfig(GraphDatabaseSettings.pagecache_memory, 128L * 1024 * 1024)
        // Do not hold shutdown for idle Bolt connections.
        .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofMillis(200))
        .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofMillis(200))
        .build();
    dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
    return new Neo4jServer(dbms, port);
  }

  public String boltUri() {
    return "bolt://127.0.0.1:" + boltPort;
  }

  public int boltPort() {
    return boltPort;
  }

  @Override
  public void close() {
    dbms.shutdown();
  }
}
