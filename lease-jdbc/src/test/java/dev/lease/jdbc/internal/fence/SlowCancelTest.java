package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.OptionsAccess;
import dev.lease.testing.TestDatabase;
import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.sqlite.Function;
import org.sqlite.SQLiteConnection;

/**
 * Review L1: a driver's cancel can block for seconds (pgjdbc waits up to {@code
 * cancelSignalTimeout} for the cancel socket; Connector/J opens a connection). A lost lease's
 * cancel must not hold the fence's monitor while it does, or the owner's rollback and close wait
 * for it; and it must not run on the common pool. The driver's cancel is made slow here by a
 * statement proxy that cancels for real and then waits on a latch: the rollback must complete while
 * it waits.
 */
class SlowCancelTest {

  @Test
  void cancelsRunOnNamedDaemonThreadsNotTheCommonPool() throws Exception {
    Executor cancels = OptionsAccess.fence(FencingOptions.defaults()).cancelExecutor();
    assertNotSame(ForkJoinPool.commonPool(), cancels);
    assertSame(CancelThreads.SHARED, cancels);
    AtomicReference<Thread> ran = new AtomicReference<>();
    CountDownLatch done = new CountDownLatch(1);
    cancels.execute(
        () -> {
          ran.set(Thread.currentThread());
          done.countDown();
        });
    assertTrue(done.await(10, TimeUnit.SECONDS));
    assertTrue(ran.get().isDaemon());
    assertTrue(ran.get().getName().startsWith("lease-jdbc-cancel-"), ran.get().getName());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void theOwnersRollbackDoesNotWaitForASlowCancel(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.manager("loser", LeaseTimings.DEFAULTS).tryClaim("slow").orElseThrow();
      CountDownLatch cancelStarted = new CountDownLatch(1);
      CountDownLatch releaseCancel = new CountDownLatch(1);
      FencedDataSource ds =
          FencedDataSource.wrap(
              slowCancel(f.pool, cancelStarted, releaseCancel), f.options().build());
      CountDownLatch running = new CountDownLatch(1);
      CountDownLatch rolledBack = new CountDownLatch(1);
      AtomicReference<SQLException> statementError = new AtomicReference<>();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      String longQuery =
          switch (db) {
            case POSTGRESQL -> "SELECT pg_sleep(30)";
            case SQLITE ->
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
                    + " WHERE x < 4000000000) SELECT count(signal(x)) FROM c";
            default -> "SELECT SLEEP(30)";
          };
      Thread worker =
          new Thread(
              () -> {
                try (Connection c = ds.getConnection()) {
                  if (db.isSqlite()) {
                    Function.create(
                        c.unwrap(SQLiteConnection.class),
                        "signal",
                        new Function() {
                          @Override
                          protected void xFunc() throws SQLException {
                            running.countDown();
                            result(1);
                          }
                        });
                  }
                  try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
                    c.setAutoCommit(false);
                    f.insert(c, 1, lease.term());
                    try (Statement s = c.createStatement();
                        ResultSet rs = s.executeQuery(longQuery)) {
                      rs.next();
                    } catch (SQLException e) {
                      statementError.set(e);
                    }
                    c.rollback(); // must not wait for the cancel still in flight
                    rolledBack.countDown();
                  }
                  c.setAutoCommit(true);
                } catch (Throwable e) {
                  failure.set(e);
                }
              },
              "worker-under-lease");
      worker.start();
      if (db.isSqlite()) {
        assertTrue(running.await(10, TimeUnit.SECONDS));
      } else {
        awaitRunning(f, db, longQuery);
      }
      f.skew.addAndGet(TimeUnit.SECONDS.toNanos(11)); // past the local deadline: lost
      assertFalse(lease.isHeld());
      assertTrue(cancelStarted.await(10, TimeUnit.SECONDS), "the loss cancels the statement");
      boolean quick = rolledBack.await(10, TimeUnit.SECONDS);
      releaseCancel.countDown();
      worker.join(15_000);
      assertFalse(worker.isAlive());
      assertTrue(quick, "the rollback waited for the driver's cancel");
      assertEquals(null, failure.get());
      assertInstanceOf(LeaseLostSQLException.class, statementError.get());
      assertEquals(0, f.count(null));
    }
  }

  private static void awaitRunning(Fixture f, TestDatabase db, String query) throws Exception {
    String probe =
        db == TestDatabase.POSTGRESQL
            ? "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query = ?"
            : "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = ?";
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() - deadline < 0) {
      try (Connection c = f.pool.getConnection();
          java.sql.PreparedStatement ps = c.prepareStatement(probe)) {
        ps.setString(1, query);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (rs.getInt(1) > 0) {
            return;
          }
        }
      }
      java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
    throw new AssertionError("the long query never started");
  }

  /**
   * {@code target} whose statements' {@code cancel()} cancels, then waits for {@code release} (as
   * pgjdbc waits for its cancel socket).
   */
  private static DataSource slowCancel(
      DataSource target, CountDownLatch started, CountDownLatch release) {
    return new DataSource() {
      @Override
      public Connection getConnection() throws SQLException {
        return connection(target.getConnection());
      }

      @Override
      public Connection getConnection(String user, String password) throws SQLException {
        return connection(target.getConnection(user, password));
      }

      private Connection connection(Connection c) {
        return (Connection) proxy(Connection.class, c, started, release);
      }

      @Override
      public PrintWriter getLogWriter() throws SQLException {
        return target.getLogWriter();
      }

      @Override
      public void setLogWriter(PrintWriter out) throws SQLException {
        target.setLogWriter(out);
      }

      @Override
      public void setLoginTimeout(int seconds) throws SQLException {
        target.setLoginTimeout(seconds);
      }

      @Override
      public int getLoginTimeout() throws SQLException {
        return target.getLoginTimeout();
      }

      @Override
      public Logger getParentLogger() {
        return Logger.getGlobal();
      }

      @Override
      public <T> T unwrap(Class<T> iface) throws SQLException {
        return target.unwrap(iface);
      }

      @Override
      public boolean isWrapperFor(Class<?> iface) throws SQLException {
        return target.isWrapperFor(iface);
      }
    };
  }

  private static Object proxy(
      Class<?> type, Object target, CountDownLatch started, CountDownLatch release) {
    InvocationHandler h =
        (p, m, args) -> {
          Object result;
          try {
            result = m.invoke(target, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          if (m.getName().equals("cancel")) {
            started.countDown();
            if (!release.await(30, TimeUnit.SECONDS)) {
              throw new AssertionError("never released");
            }
          }
          if (m.getName().equals("createStatement") && result instanceof Statement) {
            return proxy(Statement.class, result, started, release);
          }
          return result;
        };
    return Proxy.newProxyInstance(SlowCancelTest.class.getClassLoader(), new Class<?>[] {type}, h);
  }
}
