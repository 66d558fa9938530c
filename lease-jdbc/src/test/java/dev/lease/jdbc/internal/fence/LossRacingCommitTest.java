package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.MonotonicClock;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.OptionsAccess;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.sqlite.Function;
import org.sqlite.SQLiteConnection;

/**
 * Issue 9, path 7: a lease's loss and the end of its transaction are not ordered. A loss poisons
 * the transaction verified under the lost lease and cancels its running statement, and nothing of
 * it may reach the connection's next, healthy transaction. The cancel runs off the reporting thread
 * (pgjdbc and Connector/J open a connection for it), so it can arrive late: here the test holds it
 * back (an executor it runs by hand) until the next transaction's statement is running, the worst
 * case. The negative control drops the generation check and the late cancel kills the healthy
 * statement.
 */
class LossRacingCommitTest {

  @OnEveryDatabase
  void aLateLossOfTheLastTransactionNeverReachesTheNext(TestDatabase db) throws Exception {
    Outcome o = race(db, false);
    assertEquals(LeaseLostSQLException.POISONED, o.firstCommit, "the lost one was poisoned");
    assertNull(o.secondQuery, "the next transaction's statement ran to its end");
    assertEquals(1, o.secondRows, "and the next transaction committed");
  }

  @OnEveryDatabase
  void negativeControlWithoutGenerationsTheLateCancelKillsTheNextTransactionsStatement(
      TestDatabase db) throws Exception {
    Outcome o = race(db, true);
    assertInstanceOf(SQLException.class, o.secondQuery, "the late cancel hit the healthy one");
  }

  record Outcome(String firstCommit, Throwable secondQuery, int secondRows) {}

  private static String sleepQuery(TestDatabase db, int seconds) {
    switch (db) {
      case POSTGRESQL:
        return "SELECT pg_sleep(" + seconds + ")";
      case SQLITE:
        // SQLite checks for an interrupt between steps: rows follow the sleeping one
        return "WITH RECURSIVE c(x) AS (SELECT sleep_ms("
            + seconds * 1000
            + ") UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) FROM c";
      default:
        return "SELECT SLEEP(" + seconds + ")";
    }
  }

  /**
   * The next transaction's statement: on PostgreSQL and MySQL/MariaDB a read that waits on a row
   * the test holds locked until the late cancel has run, so the cancel finds it running however
   * slow the machine is (a 1 s sleep ended before a slow cancel came: the control failed under
   * load); on SQLite a sleep, whose in-process interrupt cannot be slow.
   */
  private static String nextStatement(TestDatabase db, Fixture f) {
    return db.isSqlite()
        ? sleepQuery(db, 1)
        : "SELECT id FROM " + f.data + " WHERE id = " + LOCKED_ID + " FOR UPDATE";
  }

  private static final int LOCKED_ID = 1_000;

  private static Outcome race(TestDatabase db, boolean weakened) throws Exception {
    try (Fixture f = new Fixture(db, 5)) {
      String next = nextStatement(db, f);
      Connection locker = null;
      if (!db.isSqlite()) {
        try (Connection c = f.pool.getConnection()) {
          f.insert(c, LOCKED_ID, 0);
          if (!c.getAutoCommit()) {
            c.commit();
          }
        }
        locker = f.pool.getConnection();
        locker.setAutoCommit(false);
        try (Statement s = locker.createStatement()) {
          s.executeQuery(next).close();
        }
      }
      Lease lost = f.manager("lost", LeaseTimings.DEFAULTS).tryClaim("a").orElseThrow();
      Lease healthy =
          f.manager(f.pool, "healthy", LeaseTimings.DEFAULTS, MonotonicClock.SYSTEM)
              .tryClaim("b")
              .orElseThrow();
      ConcurrentLinkedQueue<Runnable> cancels = new ConcurrentLinkedQueue<>();
      FencingOptions.Builder b = OptionsAccess.cancelExecutor(f.options(), cancels::add);
      FencedDataSource ds =
          f.fenced((weakened ? WeakenedFence.weaken(b, WeakenedFence.NO_GENERATIONS) : b).build());
      CountDownLatch[] running = {new CountDownLatch(1), new CountDownLatch(1)};
      CountDownLatch firstDone = new CountDownLatch(1);
      AtomicReference<String> firstCommit = new AtomicReference<>();
      AtomicReference<Throwable> secondQuery = new AtomicReference<>();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread worker =
          new Thread(
              () -> {
                try (Connection c = ds.getConnection();
                    Statement s = c.createStatement()) {
                  int[] call = {0};
                  if (db.isSqlite()) {
                    Function.create(
                        c.unwrap(SQLiteConnection.class),
                        "sleep_ms",
                        new Function() {
                          @Override
                          protected void xFunc() throws SQLException {
                            running[call[0]++].countDown();
                            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(value_int(0)));
                            result(1);
                          }
                        });
                  }
                  c.setAutoCommit(false);
                  try (LeaseContext.Scope scope = LeaseContext.bind(lost)) {
                    f.insert(c, 1, lost.term());
                    s.executeQuery(sleepQuery(db, 1)).close(); // the loss lands while it runs
                    try {
                      c.commit();
                    } catch (LeaseLostSQLException e) {
                      firstCommit.set(e.getSQLState());
                      c.rollback();
                    }
                  }
                  firstDone.countDown();
                  try (LeaseContext.Scope scope = LeaseContext.bind(healthy)) {
                    f.insert(c, 2, healthy.term());
                    try (ResultSet rs = s.executeQuery(next)) {
                      rs.next();
                    } catch (SQLException e) {
                      secondQuery.set(e);
                    }
                    if (secondQuery.get() == null) {
                      c.commit();
                    } else {
                      c.rollback();
                    }
                  }
                } catch (Throwable t) {
                  failure.set(t);
                }
              },
              "worker");
      worker.start();
      f.awaitRunning(running[0], sleepQuery(db, 1));
      f.skew.addAndGet(TimeUnit.SECONDS.toNanos(11)); // past the local deadline
      assertFalse(lost.isHeld()); // the loss: its callbacks run off this thread
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (cancels.isEmpty() && System.nanoTime() - deadline < 0) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      }
      assertFalse(cancels.isEmpty(), "the loss queued a cancel of the running statement");
      assertTrue(firstDone.await(20, TimeUnit.SECONDS), "the lost lease's transaction ended");
      f.awaitRunning(running[1], next); // the next transaction's statement
      for (Runnable late : List.copyOf(cancels)) {
        late.run(); // the cancel arrives late
      }
      if (locker != null) {
        // a cancel that reached the statement ends it (PostgreSQL acts on a cancel request a moment
        // after it was sent); one that did not leaves it waiting: give it a bounded moment, then
        // let the statement have its row
        awaitGone(f, next, TimeUnit.SECONDS.toNanos(2));
        locker.rollback();
        locker.close();
      }
      worker.join(30_000);
      assertFalse(worker.isAlive());
      if (failure.get() != null) {
        throw new AssertionError("the worker failed", failure.get());
      }
      assertTrue(healthy.isHeld());
      return new Outcome(firstCommit.get(), secondQuery.get(), f.count("id = 2"));
    }
  }

  /** Waits until {@code query} no longer runs on the server, at most {@code nanos}. */
  private static void awaitGone(Fixture f, String query, long nanos) throws Exception {
    long deadline = System.nanoTime() + nanos;
    while (System.nanoTime() - deadline < 0 && f.isRunning(query)) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
  }
}
