package io.wattgraph.system;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The load generator's own ground truth, on loopback: messages of exact sizes, counts per turn. */
class ShortConnectionsTest {
  @TempDir
  Path dir;

  @Test
  void httpMessagesHaveExactlyTheAskedSizeAndAreWellFormed() {
    for (int size : new int[] {60, 100, 999, 1000, 1001, 100_000}) {
      String req = new String(ShortConnections.message(true, true, size), StandardCharsets.US_ASCII);
      assertEquals(size, req.length());
      assertTrue(req.startsWith("GET /soak HTTP/1.1\r\nHost: soak\r\n") && req.endsWith("\r\n\r\n"), req);
      String resp = new String(ShortConnections.message(false, true, size), StandardCharsets.US_ASCII);
      assertEquals(size, resp.length());
      int headEnd = resp.indexOf("\r\n\r\n") + 4;
      int length = Integer.parseInt(resp.substring(resp.indexOf("Content-Length: ") + 16, headEnd - 4));
      assertEquals(size - headEnd, length, "Content-Length is the body's: " + resp.substring(0, headEnd));
    }
    assertEquals(100, ShortConnections.message(true, false, 100).length);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ShortConnections.message(true, true, 10));
    assertTrue(e.getMessage().contains("at least"), e.getMessage());
  }

  @Test
  void keepAliveConnectionsCountEveryTurnOnBothSides() throws Exception {
    InetAddress lo = InetAddress.getLoopbackAddress();
    int port = KafkaProcess.freePorts(1)[0];
    Path ready = dir.resolve("ready");
    Path stop = dir.resolve("stop");
    CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
      try {
        ShortConnections.server(lo, port, ready, stop, dir.resolve("server"), 100,
            ShortConnections.message(false, true, 700), 60, 3);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    for (int i = 0; i < 200 && !Files.exists(ready); i++) {
      Thread.sleep(50);
    }
    assertTrue(ShortConnections.client(lo, port, 5, 100, ShortConnections.message(true, true, 100), 700,
        dir.resolve("client"), 60, 3, 10));
    Files.writeString(stop, "stop");
    server.get(60, TimeUnit.SECONDS);
    Map<String, Long> want = Map.of("connections", 5L, "c2s", 1500L, "s2c", 10_500L, "transactions", 15L, "failures", 0L);
    assertEquals(want, ConnectionLoad.counts(dir.resolve("client")));
    assertEquals(want, ConnectionLoad.counts(dir.resolve("server")));
  }
}
