package io.wattgraph.system;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The real client and server of the system test, run as their own processes inside a namespace.
 * {@code server ADDR PORT READY_FILE REQUEST_BYTES RESPONSE_BYTES}: accepts one connection, reads
 * exactly REQUEST_BYTES, answers RESPONSE_BYTES, closes. {@code client ADDR PORT REQUEST_BYTES
 * RESPONSE_BYTES}: connects, sends, reads the whole answer, closes. Exit 0 only if all counts match.
 */
public final class TcpPeer {
  private TcpPeer() {}

  public static void main(String[] a) throws Exception {
    InetAddress addr = InetAddress.getByName(a[1]);
    int port = Integer.parseInt(a[2]);
    if (a[0].equals("server")) {
      long request = Long.parseLong(a[4]);
      long response = Long.parseLong(a[5]);
      try (ServerSocket ss = new ServerSocket()) {
        ss.bind(new InetSocketAddress(addr, port));
        Files.writeString(Path.of(a[3]), "listening\n");
        ss.setSoTimeout(120_000);
        try (Socket s = ss.accept()) {
          expect(s.getInputStream(), request, "request");
          send(s.getOutputStream(), response);
          s.shutdownOutput();
          expectEof(s.getInputStream());
        }
      }
    } else {
      long request = Long.parseLong(a[3]);
      long response = Long.parseLong(a[4]);
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(addr, port), 30_000);
        s.setSoTimeout(120_000);
        send(s.getOutputStream(), request);
        expect(s.getInputStream(), response, "response");
        s.shutdownOutput();
        expectEof(s.getInputStream());
      }
    }
  }

  private static void send(OutputStream out, long n) throws Exception {
    byte[] buf = new byte[64 * 1024];
    for (int i = 0; i < buf.length; i++) {
      buf[i] = (byte) i;
    }
    long left = n;
    while (left > 0) {
      int k = (int) Math.min(buf.length, left);
      out.write(buf, 0, k);
      left -= k;
    }
    out.flush();
  }

  private static void expect(InputStream in, long n, String what) throws Exception {
    byte[] buf = new byte[64 * 1024];
    long got = 0;
    while (got < n) {
      int k = in.read(buf, 0, (int) Math.min(buf.length, n - got));
      if (k < 0) {
        throw new IllegalStateException(what + ": EOF after " + got + " of " + n + " bytes");
      }
      got += k;
    }
  }

  private static void expectEof(InputStream in) throws Exception {
    if (in.read() != -1) {
      throw new IllegalStateException("peer sent more than agreed");
    }
  }
}
