package io.wattgraph.system;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Short-connection load between two namespace hosts, each side its own process (JDK only), each
 * counting what it completed, so the test compares the graph with what really happened.
 *
 * <p>{@code server ADDR PORT READY_FILE STOP_FILE COUNTS_FILE REQUEST RESPONSE SECONDS}: accepts
 * connections; on each reads REQUEST bytes, answers RESPONSE bytes and closes first (the server
 * holds TIME_WAIT, so the client's ports come back at once, as with the reused ports); stops
 * when STOP_FILE exists or after SECONDS, then writes its counts.
 *
 * <p>{@code client ADDR PORT CONNECTIONS PER_SECOND REQUEST RESPONSE COUNTS_FILE SECONDS}: opens
 * CONNECTIONS connections, paced at PER_SECOND, each sending REQUEST bytes and reading RESPONSE
 * bytes to the end; stops after SECONDS whatever is left; writes its counts. Exit 0 unless a
 * connection failed.
 *
 * <p>Counts file: {@code connections=N c2s=BYTES s2c=BYTES failures=N}.
 */
public final class ShortConnections {
  private ShortConnections() {}

  public static void main(String[] a) throws Exception {
    InetAddress addr = InetAddress.getByName(a[1]);
    int port = Integer.parseInt(a[2]);
    if (a[0].equals("server")) {
      server(addr, port, Path.of(a[3]), Path.of(a[4]), Path.of(a[5]), Integer.parseInt(a[6]), Integer.parseInt(a[7]),
          Long.parseLong(a[8]));
    } else {
      System.exit(client(addr, port, Long.parseLong(a[3]), Long.parseLong(a[4]), Integer.parseInt(a[5]),
          Integer.parseInt(a[6]), Path.of(a[7]), Long.parseLong(a[8])) ? 0 : 1);
    }
  }

  static void server(InetAddress addr, int port, Path ready, Path stop, Path counts, int request, int response,
      long seconds) throws Exception {
    AtomicLong done = new AtomicLong();
    AtomicLong failures = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    try (ServerSocket ss = new ServerSocket()) {
      ss.setReuseAddress(true);
      ss.bind(new InetSocketAddress(addr, port), 1024);
      ss.setSoTimeout(200);
      Files.writeString(ready, "listening\n");
      byte[] answer = new byte[response];
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
            readExactly(s.getInputStream(), request);
            s.getOutputStream().write(answer);
            s.getOutputStream().flush();
            done.incrementAndGet();
          } catch (IOException e) {
            failures.incrementAndGet();
          }
        });
      }
    }
    pool.shutdown();
    pool.awaitTermination(60, TimeUnit.SECONDS);
    long n = done.get();
    Files.writeString(counts, "connections=" + n + " c2s=" + n * request + " s2c=" + n * response
        + " failures=" + failures.get() + "\n");
  }

  static boolean client(InetAddress addr, int port, long connections, long perSecond, int request, int response,
      Path counts, long seconds) throws Exception {
    byte[] payload = new byte[request];
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
        s.getOutputStream().write(payload);
        s.getOutputStream().flush();
        readExactly(s.getInputStream(), response);
        if (s.getInputStream().read() != -1) {
          throw new IOException("server sent more than agreed");
        }
        done++;
      } catch (IOException e) {
        failures++;
        System.err.println("connection " + i + ": " + e);
      }
    }
    Files.writeString(counts, "connections=" + done + " c2s=" + done * request + " s2c=" + done * response
        + " failures=" + failures + "\n");
    return failures == 0;
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
