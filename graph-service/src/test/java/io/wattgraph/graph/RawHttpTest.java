package io.wattgraph.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The raw client reports what a server answered when the server refused an oversized request before reading
 * all of it and closed (Tomcat's 400 for a header beyond its limit): the client's write then fails with a
 * broken pipe or a reset, and AuthBypassTest once failed on that instead of asserting the 400.
 */
class RawHttpTest {

    @Test
    void theAnswerToARequestRefusedHalfWayIsReadNotLostToTheBrokenPipe() throws Exception {
        String answer = "HTTP/1.1 400 \r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"error\":\"too long\"}";
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> refuser = CompletableFuture.runAsync(() -> answerAfterTheHeadAndClose(server, answer));
            // 16 MiB of body: far beyond what the socket buffers take, so the write is still going when the
            // server closes with it unread, and the kernel answers the rest with a reset.
            RawHttp.Response r = RawHttp.send(server.getLocalPort(), "POST", "/api/v1/cypher", null, "x".repeat(16 << 20));
            refuser.get();
            assertThat(r.status()).isEqualTo(400);
            assertThat(r.body()).isEqualTo("{\"error\":\"too long\"}");
        }
    }

    @Test
    void aServerThatClosesWithoutAnswerIsStillAnError() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> refuser = CompletableFuture.runAsync(() -> answerAfterTheHeadAndClose(server, ""));
            assertThatThrownBy(() -> RawHttp.send(server.getLocalPort(), "POST", "/", null, "x".repeat(16 << 20)))
                    .isInstanceOf(SocketException.class);
            refuser.get();
        }
    }

    private static void answerAfterTheHeadAndClose(ServerSocket server, String answer) {
        try (Socket s = server.accept()) {
            InputStream in = s.getInputStream();
            int matched = 0;
            while (matched < 4) { // up to the blank line that ends the head
                int b = in.read();
                if (b < 0) {
                    return;
                }
                matched = b == "\r\n\r\n".charAt(matched) ? matched + 1 : (b == '\r' ? 1 : 0);
            }
            s.getOutputStream().write(answer.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
