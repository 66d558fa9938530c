package dev.lease.spring.boot;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryServer;
import dev.lease.testing.OnPostgresql;
import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;

/**
 * A database that accepts TCP but never answers (a local server socket that accepts and stays
 * silent) does not hang start-up: the lease manager's start fails within {@code
 * lease.connect-timeout} with a message naming it. Negative control: with a bound far longer than
 * the test waits, start-up is still hanging when the test stops waiting.
 */
class ConnectTimeoutTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {}

  /** Accepts every connection and never writes a byte. */
  static final class SilentServer implements AutoCloseable {
    final ServerSocket server;
    final List<Socket> accepted = new ArrayList<>();

    SilentServer() throws IOException {
      server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      Thread t =
          new Thread(
              () -> {
                while (!server.isClosed()) {
                  try {
                    Socket s = server.accept();
                    synchronized (accepted) {
                      accepted.add(s);
                    }
                  } catch (IOException e) {
                    return;
                  }
                }
              },
              "silent-database");
      t.setDaemon(true);
      t.start();
    }

    int port() {
      return server.getLocalPort();
    }

    @Override
    public void close() throws IOException {
      server.close();
      synchronized (accepted) {
        for (Socket s : accepted) {
          s.close();
        }
      }
    }
  }

  static String url(TestDatabase db, int port) {
    return switch (db) {
      case POSTGRESQL -> "jdbc:postgresql://127.0.0.1:" + port + "/test?user=postgres";
      case MYSQL -> "jdbc:mysql://127.0.0.1:" + port + "/test?user=root&password=";
      default -> "jdbc:mariadb://127.0.0.1:" + port + "/test?user=root&password=";
    };
  }

  private static Map<String, Object> properties(TestDatabase db, int port, String timeout) {
    Map<String, Object> p = new HashMap<>();
    p.put("spring.autoconfigure.exclude", Replicas.NO_JPA);
    // Boot's SQL init asks the database whether it is embedded, unbounded: not the lease's part
    p.put("spring.sql.init.mode", "never");
    p.putAll(withBootDefaults(db, port, timeout));
    return p;
  }

  /**
   * An application as a user writes one: JPA on the class path and Boot's SQL init left on, so the
   * first connection of the start-up is Boot's or Hibernate's (Boot 4 asks whether the database is
   * embedded before the lease manager exists), not the lease manager's.
   */
  private static Map<String, Object> withBootDefaults(TestDatabase db, int port, String timeout) {
    Map<String, Object> p = new HashMap<>();
    p.put("spring.main.web-application-type", "none");
    p.put("spring.main.banner-mode", "off");
    p.put("spring.jmx.enabled", false);
    p.put("spring.datasource.url", url(db, port));
    p.put("lease.table", "leases");
    p.put("lease.connect-timeout", timeout);
    return p;
  }

  @OnEveryServer
  void silentDatabaseFailsStartUpWithinTheBound(TestDatabase db) throws Exception {
    try (SilentServer silent = new SilentServer()) {
      long start = System.nanoTime();
      RuntimeException e =
          assertThrows(
              RuntimeException.class,
              () -> Replicas.builder(App.class, properties(db, silent.port(), "2s")).run());
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      String all = chain(e);
      assertTrue(all.contains("did not answer within lease.connect-timeout=2000ms"), all);
      // the bound plus the context's own start on a loaded machine; the pool's 30 s is far off
      assertTrue(tookMs < 12_000, "start-up failed after " + tookMs + " ms");
    }
  }

  @OnEveryServer
  void silentDatabaseFailsStartUpWithinTheBoundWhenBootConnectsFirst(TestDatabase db)
      throws Exception {
    try (SilentServer silent = new SilentServer()) {
      long start = System.nanoTime();
      RuntimeException e =
          assertThrows(
              RuntimeException.class,
              () -> Replicas.builder(App.class, withBootDefaults(db, silent.port(), "2s")).run());
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      String all = chain(e);
      assertTrue(all.contains("did not answer within lease.connect-timeout=2000ms"), all);
      assertTrue(tookMs < 12_000, "start-up failed after " + tookMs + " ms");
    }
  }

  /**
   * Negative control of the probe: with JPA and a bound longer than the test waits, start-up hangs
   * where Hibernate (Boot 4) or the lease manager (Boot 3.5) opens the first connection.
   */
  @OnPostgresql
  void negativeControlWhenBootConnectsFirstStartUpHangs(TestDatabase db) throws Exception {
    try (SilentServer silent = new SilentServer()) {
      CompletableFuture<Object> start =
          CompletableFuture.supplyAsync(
              () -> Replicas.builder(App.class, withBootDefaults(db, silent.port(), "10m")).run(),
              OwnThread.EXECUTOR);
      // three times the 2 s bound the test above meets
      assertThrows(TimeoutException.class, () -> start.get(6, TimeUnit.SECONDS));
      assertFalse(start.isDone());
      silent.close();
      assertThrows(Exception.class, () -> start.get(60, TimeUnit.SECONDS));
    }
  }

  /** Negative control: a bound longer than the test waits, and start-up hangs on. */
  @OnPostgresql
  void negativeControlWithoutTheBoundStartUpHangs(TestDatabase db) throws Exception {
    try (SilentServer silent = new SilentServer()) {
      CompletableFuture<Object> start =
          CompletableFuture.supplyAsync(
              () -> Replicas.builder(App.class, properties(db, silent.port(), "10m")).run(),
              OwnThread.EXECUTOR);
      assertThrows(TimeoutException.class, () -> start.get(15, TimeUnit.SECONDS));
      assertFalse(start.isDone());
      silent.close(); // the silent database goes away: the driver's read ends, start-up fails
      assertThrows(Exception.class, () -> start.get(60, TimeUnit.SECONDS));
    }
  }

  private static String chain(Throwable e) {
    StringWriter w = new StringWriter();
    e.printStackTrace(new PrintWriter(w));
    return w.toString();
  }
}
