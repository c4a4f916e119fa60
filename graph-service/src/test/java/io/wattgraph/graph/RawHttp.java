package io.wattgraph.graph;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * HTTP/1.1 over a plain socket, sending the request target byte for byte: Java's HTTP clients normalise or
 * re-encode paths, which would hide exactly the variants a scanner sends ({@code ;x}, {@code %61}, {@code /./}).
 */
final class RawHttp {

    record Response(int status, String head, String body) {
        boolean isSuccess() {
            return status >= 200 && status < 400;
        }
    }

    private RawHttp() {
    }

    static Response send(int port, String method, String target, String token, String jsonBody) throws IOException {
        StringBuilder request = new StringBuilder().append(method).append(' ').append(target).append(" HTTP/1.1\r\n")
                .append("Host: 127.0.0.1:").append(port).append("\r\nConnection: close\r\nAccept: */*\r\n");
        if (token != null) {
            request.append("Authorization: Bearer ").append(token).append("\r\n");
        }
        byte[] body = jsonBody == null ? new byte[0] : jsonBody.getBytes(StandardCharsets.UTF_8);
        if (jsonBody != null) {
            request.append("Content-Type: application/json\r\n");
        }
        request.append("Content-Length: ").append(body.length).append("\r\n\r\n");
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            socket.setSoTimeout(60_000);
            IOException cut = null;
            try {
                OutputStream out = socket.getOutputStream();
                out.write(request.toString().getBytes(StandardCharsets.ISO_8859_1));
                out.write(body);
                out.flush();
            } catch (IOException e) {
                // A server may answer (400, 431) and close before it read all of an oversized request: the
                // write then fails, but the answer is in our receive queue, and it is what callers assert on.
                cut = e;
            }
            ByteArrayOutputStream received = new ByteArrayOutputStream();
            try {
                socket.getInputStream().transferTo(received);
            } catch (IOException e) {
                // The close of a half-read request is a reset; what arrived before it is still the answer.
                if (cut != null) {
                    e.addSuppressed(cut);
                }
                cut = e;
            }
            String raw = received.toString(StandardCharsets.UTF_8);
            if (cut != null && !raw.startsWith("HTTP/1.1 ")) {
                throw cut;
            }
            int headEnd = raw.indexOf("\r\n\r\n");
            String head = headEnd < 0 ? raw : raw.substring(0, headEnd);
            String rest = headEnd < 0 ? "" : raw.substring(headEnd + 4);
            if (head.toLowerCase().contains("transfer-encoding: chunked")) {
                rest = dechunk(rest);
            }
            String[] statusLine = head.split("\r\n", 2)[0].split(" ");
            return new Response(Integer.parseInt(statusLine[1]), head, rest);
        }
    }

    private static String dechunk(String chunked) {
        StringBuilder out = new StringBuilder();
        int i = 0;
        while (i < chunked.length()) {
            int lineEnd = chunked.indexOf("\r\n", i);
            if (lineEnd < 0) {
                break;
            }
            int size = Integer.parseInt(chunked.substring(i, lineEnd).split(";")[0].trim(), 16);
            if (size == 0) {
                break;
            }
            out.append(chunked, lineEnd + 2, Math.min(chunked.length(), lineEnd + 2 + size));
            i = lineEnd + 2 + size + 2;
        }
        return out.toString();
    }
}
