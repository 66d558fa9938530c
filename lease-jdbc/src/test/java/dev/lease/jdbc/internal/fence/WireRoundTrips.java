package dev.lease.jdbc.internal.fence;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A loopback proxy in front of a server that counts the round trips clients make, whatever the
 * protocol: bytes a client sends after the server last answered start a new round trip (the MySQL
 * protocol is one command, one answer; neither MySQL driver pipelines outside batches). Every byte
 * is forwarded unchanged.
 */
final class WireRoundTrips implements AutoCloseable {

  private final ServerSocket server;
  private final String host;
  private final int port;
  private final AtomicLong roundTrips = new AtomicLong();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  WireRoundTrips(String host, int port) throws IOException {
    this.host = host;
    this.port = port;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::accept, "wire-round-trips");
    accept.setDaemon(true);
    accept.start();
  }

  /** {@code url} with {@code host:port} replaced by this proxy's address. */
  String through(String url) {
    return url.replace(host + ":" + port, "127.0.0.1:" + server.getLocalPort());
  }

  long roundTrips() {
    return roundTrips.get();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(host, port);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        sockets.add(client);
        sockets.add(upstream);
        AtomicBoolean answered = new AtomicBoolean(true);
        start(() -> copy(client.getInputStream(), upstream.getOutputStream(), answered, true));
        start(() -> copy(upstream.getInputStream(), client.getOutputStream(), answered, false));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private interface Pipe {
    void run() throws IOException;
  }

  private static void start(Pipe p) {
    Thread t =
        new Thread(
            () -> {
              try {
                p.run();
              } catch (IOException e) {
                // a side closed
              }
            },
            "wire-round-trips-pipe");
    t.setDaemon(true);
    t.start();
  }

  private void copy(InputStream in, OutputStream out, AtomicBoolean answered, boolean fromClient)
      throws IOException {
    byte[] buf = new byte[16384];
    int n;
    while ((n = in.read(buf)) >= 0) {
      if (fromClient) {
        if (answered.getAndSet(false)) {
          roundTrips.incrementAndGet(); // a new burst after the server's answer
        }
      } else {
        answered.set(true);
      }
      out.write(buf, 0, n);
      out.flush();
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket s : sockets) {
      try {
        s.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }
}
