package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.OptionsAccess;
import dev.lease.testing.ForwardingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

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

  @OnEveryDatabase
  void theOwnersRollbackDoesNotWaitForASlowCancel(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.manager("loser", LeaseTimings.DEFAULTS).tryClaim("slow").orElseThrow();
      CountDownLatch cancelStarted = new CountDownLatch(1);
      CountDownLatch releaseCancel = new CountDownLatch(1);
      FencedDataSource ds =
          FencedDataSource.wrap(
              slowCancel(f.pool, cancelStarted, releaseCancel), f.options().build());
      CountDownLatch rolledBack = new CountDownLatch(1);
      Fixture.Worker worker =
          f.longQueryUnderLease(
              ds,
              lease,
              c -> {
                c.rollback(); // must not wait for the cancel still in flight
                rolledBack.countDown();
              });
      f.skew.addAndGet(TimeUnit.SECONDS.toNanos(11)); // past the local deadline: lost
      assertFalse(lease.isHeld());
      assertTrue(cancelStarted.await(10, TimeUnit.SECONDS), "the loss cancels the statement");
      boolean quick = rolledBack.await(10, TimeUnit.SECONDS);
      releaseCancel.countDown();
      worker.thread().join(15_000);
      assertFalse(worker.thread().isAlive());
      assertTrue(quick, "the rollback waited for the driver's cancel");
      assertEquals(null, worker.failure().get());
      assertInstanceOf(LeaseLostSQLException.class, worker.queryError().get());
      assertEquals(0, f.count(null));
    }
  }

  /**
   * {@code target} whose statements' {@code cancel()} cancels, then waits for {@code release} (as
   * pgjdbc waits for its cancel socket).
   */
  private static DataSource slowCancel(
      DataSource target, CountDownLatch started, CountDownLatch release) {
    return new ForwardingDataSource(target) {
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
