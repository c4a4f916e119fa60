package io.wattgraph.localstack;

import inet.ipaddr.IPAddressString;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.config.Setting;

/**
 * A real Neo4j 5 (Community) database with its Bolt connector on loopback, authentication off.
 * Clients reach it only over Bolt, as they would a Neo4j server.
 */
public final class Neo4jServer implements AutoCloseable {

  /** Per-transaction memory bound of {@link #queryHardening()} (db.memory.transaction.max). */
  public static final long TRANSACTION_MEMORY_MAX = 256L * 1024 * 1024;

  /**
   * Settings for a Neo4j that answers ad-hoc queries (graph-service's Cypher endpoint): no LOAD CSV from files
   * (dbms.security.allow_csv_import_from_file_urls=false) or from any URL (internal.dbms.cypher_ip_blocklist
   * covering every address), and a memory bound per transaction (db.memory.transaction.max). The stream job
   * does not import files, so nothing of the project needs either.
   */
  public static Map<Setting<?>, Object> queryHardening() {
    Map<Setting<?>, Object> settings = new LinkedHashMap<>();
    settings.put(GraphDatabaseSettings.allow_file_urls, false);
    settings.put(GraphDatabaseInternalSettings.cypher_ip_blocklist,
        List.of(new IPAddressString("0.0.0.0/0"), new IPAddressString("::/0")));
    settings.put(GraphDatabaseSettings.memory_transaction_max_size, TRANSACTION_MEMORY_MAX);
    return settings;
  }

  private final DatabaseManagementService dbms;
  private final int boltPort;

  private Neo4jServer(DatabaseManagementService dbms, int boltPort) {
    this.dbms = dbms;
    this.boltPort = boltPort;
  }

  /** Starts Neo4j with its files under dir; a port of 0 picks a free one. */
  public static Neo4jServer start(Path dir, int boltPort) {
    int port = FreePorts.resolve(boltPort);
    DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(dir.toAbsolutePath());
    queryHardening().forEach((setting, value) -> set(builder, setting, value));
    DatabaseManagementService dbms = builder
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

  @SuppressWarnings("unchecked")
  private static <T> void set(DatabaseManagementServiceBuilder builder, Setting<T> setting, Object value) {
    builder.setConfig(setting, (T) value);
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
