package io.wattgraph.system;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * One process of the HTTP/1.1 chain of the live request test, run in a namespace host (the JDK's
 * HttpServer and HttpClient, one keep-alive connection per hop: requests are sequential).
 * <ul>
 *   <li>{@code server ADDR PORT READY_FILE [UPSTREAM_URL CALLS]}: answers every request with
 *       {@link #RESPONSE_BYTES} bytes; with an upstream, after making CALLS requests to it, each of
 *       which must succeed (a proxy: 1, a backend calling a store: 2). Runs until killed.</li>
 *   <li>{@code client URL GAP_MS}: requests one after the other, GAP_MS apart, each of which must be
 *       answered 200 with the whole body. Commands on stdin: {@code N} makes N requests;
 *       {@code run MAX} makes requests until the line {@code stop} comes or MAX were made. Each
 *       prints {@code done K}, K the requests made. Exits at the end of stdin.</li>
 * </ul>
 * The test counts the requests: each hop makes exactly what it is told, or its process fails.
 */
public final class HttpChainPeer {
  static final int RESPONSE_BYTES = 512;
  private static final byte[] BODY = new byte[RESPONSE_BYTES];
  private static final String END = "\0end of stdin";

  private HttpChainPeer() {}

  public static void main(String[] a) throws Exception {
    Arrays.fill(BODY, (byte) 'x');
    if (a[0].equals("server")) {
      serve(a[1], Integer.parseInt(a[2]), Path.of(a[3]), a.length > 4 ? URI.create(a[4]) : null,
          a.length > 5 ? Integer.parseInt(a[5]) : 0);
    } else {
      client(URI.create(a[1]), Long.parseLong(a[2]));
    }
  }

  static HttpClient http() {
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(30)).build();
  }

  /** A GET that must be answered 200 with the whole body. */
  static void call(HttpClient http, URI uri) throws Exception {
    HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
    if (r.statusCode() != 200 || r.body().length != RESPONSE_BYTES) {
      throw new IllegalStateException(uri + " answered " + r.statusCode() + " with " + r.body().length + " bytes");
    }
  }

  static void serve(String addr, int port, Path ready, URI upstream, int calls) throws Exception {
    HttpClient http = upstream == null ? null : http();
    HttpServer server = HttpServer.create(new InetSocketAddress(addr, port), 0);
    server.createContext("/", exchange -> {
      try (HttpExchange x = exchange) {
        x.getRequestBody().readAllBytes();
        for (int i = 0; i < calls; i++) {
          call(http, upstream);
        }
        x.sendResponseHeaders(200, RESPONSE_BYTES);
        try (OutputStream out = x.getResponseBody()) {
          out.write(BODY);
        }
      } catch (Exception e) {
        // A failed hop must fail the test, not be retried or answered: stop the process.
        e.printStackTrace();
        Runtime.getRuntime().halt(3);
      }
    });
    server.start(); // one dispatcher thread: requests one at a time, one upstream connection
    Files.writeString(ready, "listening\n");
  }

  static void client(URI uri, long gapMs) throws Exception {
    HttpClient http = http();
    BlockingQueue<String> commands = new LinkedBlockingQueue<>();
    Thread stdin = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          commands.add(line.trim());
        }
      } catch (Exception e) {
        e.printStackTrace();
      }
      commands.add(END);
    });
    stdin.setDaemon(true);
    stdin.start();
    for (String command; !(command = commands.take()).equals(END); ) {
      boolean untilStop = command.startsWith("run ");
      long max = Long.parseLong(untilStop ? command.substring(4) : command);
      long made = 0;
      while (made < max && !(untilStop && "stop".equals(commands.peek()))) {
        call(http, uri);
        made++;
        Thread.sleep(gapMs);
      }
      if (untilStop && "stop".equals(commands.peek())) {
        commands.take();
      }
      System.out.println("done " + made);
      System.out.flush();
    }
  }
}
