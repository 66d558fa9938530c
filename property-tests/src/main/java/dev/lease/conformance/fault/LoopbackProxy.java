package dev.lease.conformance.fault;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy between a process and its database server, both ends on loopback only: it listens on
 * 127.0.0.1 at an ephemeral port and connects to the server's port on 127.0.0.1. The fault runs use
 * it to delay a process's traffic (every chunk waits while a delay is set) or to drop its
 * connections (reset, as a broken network would).
 */
public final class LoopbackProxy implements AutoCloseable {

  private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

  private final ServerSocket server;
  private final int targetPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final AtomicLong delayUntilNanos = new AtomicLong(System.nanoTime());
  private volatile long delayMillis;
  private volatile boolean closed;

  public LoopbackProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket();
    server.bind(new InetSocketAddress(LOOPBACK, 0));
    Thread accept = new Thread(this::accept, "loopback-proxy-" + server.getLocalPort());
    accept.setDaemon(true);
    accept.start();
  }

  /** The port processes connect to instead of the database's. */
  public int port() {
    return server.getLocalPort();
  }

  /** Delays every chunk in both directions by {@code millis} for the next {@code forMillis}. */
  public void delay(long millis, long forMillis) {
    delayMillis = millis;
    delayUntilNanos.set(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(forMillis));
  }

  /** Resets every connection now open through the proxy. */
  public int dropConnections() {
    int n = 0;
    for (Socket s : sockets) {
      try {
        s.setSoLinger(true, 0); // RST, not FIN: the peer sees a broken connection
        s.close();
        n++;
      } catch (IOException e) {
        // already gone
      }
    }
    sockets.clear();
    return n;
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket();
        try {
          upstream.connect(new InetSocketAddress(LOOPBACK, targetPort), 5_000);
        } catch (IOException e) {
          client.close();
          continue;
        }
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        sockets.add(client);
        sockets.add(upstream);
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t =
        new Thread(
            () -> {
              byte[] buffer = new byte[16 * 1024];
              try (InputStream in = from.getInputStream();
                  OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                  if (System.nanoTime() - delayUntilNanos.get() < 0) {
                    // the injected fault: this traffic is late
                    Thread.sleep(delayMillis);
                  }
                  out.write(buffer, 0, n);
                  out.flush();
                }
              } catch (IOException | InterruptedException e) {
                // one side closed or was reset; close the other
              } finally {
                closeQuietly(from);
                closeQuietly(to);
                sockets.remove(from);
                sockets.remove(to);
              }
            },
            "loopback-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(Closeable s) {
    try {
      s.close();
    } catch (IOException e) {
      // nothing to do
    }
  }

  @Override
  public void close() {
    closed = true;
    closeQuietly(server);
    dropConnections();
  }
}
