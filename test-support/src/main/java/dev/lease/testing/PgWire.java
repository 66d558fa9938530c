package dev.lease.testing;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A loopback proxy in front of a PostgreSQL server that counts what clients send (for the tests and
 * the benchmarks): the round trips they make: every Sync ({@code 'S'}) and simple Query ({@code
 * 'Q'}) message a client sends ends a batch of messages the client then waits for the server to
 * answer. It reads the client's side of the protocol message by message (the untyped startup
 * message first; connect with {@code sslmode=disable}) and forwards every byte unchanged.
 */
public final class PgWire implements AutoCloseable {

  private final ServerSocket server;
  private final String host;
  private final int port;
  private final AtomicLong roundTrips = new AtomicLong();
  private final AtomicLong syncs = new AtomicLong();
  private final AtomicLong parses = new AtomicLong();
  private final AtomicLong executes = new AtomicLong();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  public PgWire(String host, int port) throws IOException {
    this.host = host;
    this.port = port;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::accept, "pg-round-trips");
    accept.setDaemon(true);
    accept.start();
  }

  /** The JDBC URL of the test database through this proxy. */
  public String url() {
    return "jdbc:postgresql://127.0.0.1:"
        + server.getLocalPort()
        + "/test?user=postgres&sslmode=disable&gssEncMode=disable";
  }

  /** {@link #url()} with pgjdbc's {@code prepareThreshold}. */
  public String url(int prepareThreshold) {
    return url() + "&prepareThreshold=" + prepareThreshold;
  }

  public long roundTrips() {
    return roundTrips.get();
  }

  /** Parse messages sent: a statement the server has not prepared under a name yet. */
  public long parses() {
    return parses.get();
  }

  /**
   * Statements the server ran: Execute messages, and simple queries (which this project's tests do
   * not send with more than one statement).
   */
  public long executes() {
    return executes.get();
  }

  /** Sync messages and simple queries sent: each is answered with a ReadyForQuery. */
  public long syncs() {
    return syncs.get();
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
        java.util.concurrent.atomic.AtomicBoolean answered =
            new java.util.concurrent.atomic.AtomicBoolean();
        start(
            () ->
                clientToServer(
                    client.getInputStream(),
                    new java.io.BufferedOutputStream(upstream.getOutputStream(), 65536),
                    answered));
        start(() -> copy(upstream.getInputStream(), client.getOutputStream(), answered));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private interface Pipe {
    void run() throws IOException;
  }

  private void start(Pipe p) {
    Thread t =
        new Thread(
            () -> {
              try {
                p.run();
              } catch (IOException e) {
                // a side closed
              }
            },
            "pg-round-trips-pipe");
    t.setDaemon(true);
    t.start();
  }

  private void clientToServer(
      InputStream in, OutputStream out, java.util.concurrent.atomic.AtomicBoolean answered)
      throws IOException {
    DataInputStream d = new DataInputStream(in);
    int length = d.readInt(); // the startup message: no type byte
    byte[] body = d.readNBytes(length - 4);
    out.write(intBytes(length));
    out.write(body);
    out.flush();
    while (true) {
      int type = d.read();
      if (type < 0) {
        return;
      }
      if (answered.getAndSet(false)) {
        roundTrips.incrementAndGet(); // a new burst after the server's answer
      }
      length = d.readInt();
      body = d.readNBytes(length - 4);
      if (type == 'S' || type == 'Q') {
        syncs.incrementAndGet();
      }
      if (type == 'E' || type == 'Q') {
        executes.incrementAndGet();
      } else if (type == 'P') {
        parses.incrementAndGet();
      }
      if (System.getProperty("pgtrace") != null) {
        System.err.println(
            "PGTRACE "
                + (char) type
                + " "
                + new String(body, java.nio.charset.StandardCharsets.UTF_8)
                    .replaceAll("[^ -~]", "."));
      }
      out.write(type);
      out.write(intBytes(length));
      out.write(body);
      if (in.available() == 0) {
        out.flush(); // the burst ends
      }
    }
  }

  private static void copy(
      InputStream in, OutputStream out, java.util.concurrent.atomic.AtomicBoolean answered)
      throws IOException {
    byte[] buf = new byte[16384];
    int n;
    while ((n = in.read(buf)) >= 0) {
      answered.set(true);
      out.write(buf, 0, n);
      out.flush();
    }
  }

  private static byte[] intBytes(int v) {
    return new byte[] {(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
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
