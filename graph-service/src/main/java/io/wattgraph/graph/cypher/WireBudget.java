package io.wattgraph.graph.cypher;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A loopback TCP relay in front of Neo4j's Bolt port that counts the bytes Neo4j sends and cuts the connection
 * once a query's budget is spent. The driver decodes a whole record before the service sees any of it and has no
 * size limit of its own, so without this one huge value ({@code RETURN range(1, 100000000)}) would be decoded
 * into gigabytes of heap. It forwards bytes untouched (Bolt, its handshake, any protocol version), one
 * driver with one connection per relay, so the count is that of the query running on it. Hand-written: no
 * library bounds the Neo4j driver's reads.
 */
final class WireBudget implements AutoCloseable {

    private static final int BUFFER = 16 * 1024;

    private final ServerSocket server;
    private final String host;
    private final int port;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final AtomicLong received = new AtomicLong();
    private volatile long limit = Long.MAX_VALUE;
    private volatile boolean tripped;

    WireBudget(String host, int port) throws IOException {
        this.host = host;
        this.port = port;
        this.server = new ServerSocket();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        Thread accept = new Thread(this::accept, "cypher-wire-budget-accept");
        accept.setDaemon(true);
        accept.start();
    }

    /** The loopback port the driver connects to. */
    int port() {
        return server.getLocalPort();
    }

    /** Starts counting a query's bytes from Neo4j against the limit. */
    void begin(long bytes) {
        tripped = false;
        received.set(0);
        limit = bytes;
    }

    /** The query is read: what Neo4j still sends (the rollback's answer) is not counted. */
    void end() {
        limit = Long.MAX_VALUE;
    }

    /** Whether the connection was cut since {@link #begin}. */
    boolean tripped() {
        return tripped;
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket neo4j = new Socket();
                try {
                    neo4j.connect(new InetSocketAddress(host, port), 5_000);
                } catch (IOException e) {
                    client.close();
                    continue;
                }
                // Bolt is request/response in small messages: Nagle's delay would add ~40 ms to each.
                client.setTcpNoDelay(true);
                neo4j.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(neo4j);
                pump(client, neo4j, false);
                pump(neo4j, client, true);
            } catch (IOException e) {
                // server closed, or one connection failed: the driver reports it
            }
        }
    }

    private void pump(Socket from, Socket to, boolean counted) {
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[BUFFER];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                    if (counted && received.addAndGet(n) > limit) {
                        tripped = true;
                        break;
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // either side closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, counted ? "cypher-wire-budget-in" : "cypher-wire-budget-out");
        t.setDaemon(true);
        t.start();
    }

    private void closeQuietly(Socket socket) {
        sockets.remove(socket);
        try {
            socket.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        sockets.forEach(this::closeQuietly);
    }
}
