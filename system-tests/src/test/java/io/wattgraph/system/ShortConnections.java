package io.wattgraph.system;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Connection load between two namespace hosts, each side its own process (JDK only), each counting
 * what it completed, so the test compares the graph with what really happened. By default short
 * connections, one request and one response each; with EXCHANGES above 1, longer ones carrying that
 * many request/response turns GAP_MS apart (with {@code http}, as HTTP/1.1 keep-alive).
 *
 * <p>{@code server ADDR PORT READY_FILE STOP_FILE COUNTS_FILE REQUEST RESPONSE SECONDS [EXCHANGES
 * raw|http]}: accepts connections; on each, EXCHANGES times, reads REQUEST bytes and answers
 * RESPONSE bytes, then closes first (the server holds TIME_WAIT, so the client's ports come back at
 * once, as with the reused ports); stops when STOP_FILE exists or after SECONDS, then writes
 * its counts.
 *
 * <p>{@code client ADDR PORT CONNECTIONS PER_SECOND REQUEST RESPONSE COUNTS_FILE SECONDS [EXCHANGES
 * GAP_MS raw|http]}: opens CONNECTIONS connections one after the other, paced at PER_SECOND, each
 * sending REQUEST bytes and reading RESPONSE bytes EXCHANGES times, then reading to the end; opens
 * no new connection after SECONDS; writes its counts. Exit 0 unless a connection failed.
 *
 * <p>With {@code http} each request is a {@code GET /soak HTTP/1.1} and each response a
 * {@code 200} with a body, both padded to exactly REQUEST and RESPONSE bytes, so the bytes on the
 * wire are known. Counts file: {@code connections=N c2s=BYTES s2c=BYTES transactions=N failures=N}.
 */
public final class ShortConnections {
  private ShortConnections() {}

  public static void main(String[] a) throws Exception {
    InetAddress addr = InetAddress.getByName(a[1]);
    int port = Integer.parseInt(a[2]);
    if (a[0].equals("server")) {
      int request = Integer.parseInt(a[6]);
      int response = Integer.parseInt(a[7]);
      boolean http = a.length > 10 && a[10].equals("http");
      server(addr, port, Path.of(a[3]), Path.of(a[4]), Path.of(a[5]), request, message(false, http, response),
          Long.parseLong(a[8]), a.length > 9 ? Integer.parseInt(a[9]) : 1);
    } else {
      int request = Integer.parseInt(a[5]);
      int response = Integer.parseInt(a[6]);
      boolean http = a.length > 11 && a[11].equals("http");
      System.exit(client(addr, port, Long.parseLong(a[3]), Long.parseLong(a[4]), message(true, http, request),
          response, Path.of(a[7]), Long.parseLong(a[8]), a.length > 9 ? Integer.parseInt(a[9]) : 1,
          a.length > 10 ? Long.parseLong(a[10]) : 0) ? 0 : 1);
    }
  }

  /** A request or response of exactly {@code size} bytes: zeros, or an HTTP/1.1 message padded to it. */
  static byte[] message(boolean request, boolean http, int size) {
    if (!http) {
      return new byte[size];
    }
    String head = request ? "GET /soak HTTP/1.1\r\nHost: soak\r\nX-Pad: " : "HTTP/1.1 200 OK\r\nContent-Length: ";
    if (request) {
      int pad = size - head.length() - 4;
      if (pad < 0) {
        throw new IllegalArgumentException("an HTTP request needs at least " + (head.length() + 4) + " bytes: " + size);
      }
      return (head + "x".repeat(pad) + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    }
    // Content-Length's digits change the head's length: the body is what the head leaves.
    for (int body = size; body >= 0; body--) {
      String h = head + body + "\r\n\r\n";
      if (h.length() + body == size) {
        return (h + "x".repeat(body)).getBytes(StandardCharsets.US_ASCII);
      }
    }
    throw new IllegalArgumentException("no HTTP response of exactly " + size + " bytes");
  }

  static void server(InetAddress addr, int port, Path ready, Path stop, Path counts, int request, byte[] answer,
      long seconds, int exchanges) throws Exception {
    AtomicLong done = new AtomicLong();
    AtomicLong failures = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    try (ServerSocket ss = new ServerSocket()) {
      ss.setReuseAddress(true);
      ss.bind(new InetSocketAddress(addr, port), 1024);
      ss.setSoTimeout(200);
      Files.writeString(ready, "listening\n");
      while (!Files.exists(stop) && System.nanoTime() < deadline) {
        Socket s;
        try {
          s = ss.accept();
        } catch (java.net.SocketTimeoutException e) {
          continue;
        }
        pool.execute(() -> {
          try (s) {
            s.setSoTimeout(30_000);
            for (int x = 0; x < exchanges; x++) {
              readExactly(s.getInputStream(), request);
              s.getOutputStream().write(answer);
              s.getOutputStream().flush();
            }
            done.incrementAndGet();
          } catch (IOException e) {
            failures.incrementAndGet();
          }
        });
      }
    }
    pool.shutdown();
    pool.awaitTermination(60, TimeUnit.SECONDS);
    writeCounts(counts, done.get(), exchanges, request, answer.length, failures.get());
  }

  static boolean client(InetAddress addr, int port, long connections, long perSecond, byte[] payload, int response,
      Path counts, long seconds, int exchanges, long gapMs) throws Exception {
    long start = System.nanoTime();
    long deadline = start + TimeUnit.SECONDS.toNanos(seconds);
    long done = 0;
    long failures = 0;
    for (long i = 0; i < connections && System.nanoTime() < deadline; i++) {
      long due = start + i * 1_000_000_000L / perSecond;
      long wait = due - System.nanoTime();
      if (wait > 0) {
        TimeUnit.NANOSECONDS.sleep(wait);
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(addr, port), 10_000);
        s.setSoTimeout(30_000);
        for (int x = 0; x < exchanges; x++) {
          if (x > 0) {
            Thread.sleep(gapMs);
          }
          s.getOutputStream().write(payload);
          s.getOutputStream().flush();
          readExactly(s.getInputStream(), response);
        }
        if (s.getInputStream().read() != -1) {
          throw new IOException("server sent more than agreed");
        }
        done++;
      } catch (IOException e) {
        failures++;
        System.err.println("connection " + i + ": " + e);
      }
    }
    writeCounts(counts, done, exchanges, payload.length, response, failures);
    return failures == 0;
  }

  /** Whole connections only: one that failed midway counts as a failure, none of its bytes. */
  private static void writeCounts(Path counts, long connections, int exchanges, int request, int response,
      long failures) throws IOException {
    long turns = connections * exchanges;
    Files.writeString(counts, "connections=" + connections + " c2s=" + turns * request + " s2c=" + turns * response
        + " transactions=" + turns + " failures=" + failures + "\n");
  }

  private static void readExactly(InputStream in, int n) throws IOException {
    byte[] buf = new byte[Math.max(1, Math.min(n, 64 * 1024))];
    int got = 0;
    while (got < n) {
      int k = in.read(buf, 0, Math.min(buf.length, n - got));
      if (k < 0) {
        throw new IOException("EOF after " + got + " of " + n + " bytes");
      }
      got += k;
    }
  }
}
