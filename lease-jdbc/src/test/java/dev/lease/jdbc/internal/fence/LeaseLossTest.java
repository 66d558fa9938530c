package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.sqlite.Function;
import org.sqlite.SQLiteConnection;

/**
 * Loss ends work: when the lease is lost, the statement running under it on a fenced connection is
 * cancelled and its transaction poisoned, as a Go context would end them.
 */
class LeaseLossTest {

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void lossCancelsTheRunningStatementAndPoisonsItsTransaction(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.manager("loser", LeaseTimings.DEFAULTS).tryClaim("loser").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      CountDownLatch running = new CountDownLatch(1);
      AtomicReference<SQLException> statementError = new AtomicReference<>();
      AtomicReference<SQLException> commitError = new AtomicReference<>();
      String longQuery;
      switch (db) {
        case POSTGRESQL:
          longQuery = "SELECT pg_sleep(30)";
          break;
        case SQLITE:
          longQuery =
              "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
                  + " WHERE x < 4000000000) SELECT count(signal(x)) FROM c";
          break;
        default:
          longQuery = "SELECT SLEEP(30)";
      }
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
                    try {
                      c.commit();
                    } catch (SQLException e) {
                      commitError.set(e);
                    }
                    c.rollback();
                  }
                } catch (SQLException e) {
                  statementError.compareAndSet(null, e);
                }
              },
              "worker-under-lease");
      worker.start();
      awaitRunning(f, db, running, longQuery);

      f.skew.addAndGet(TimeUnit.SECONDS.toNanos(11)); // past the local deadline of 10 s
      assertFalse(lease.isHeld()); // notices the deadline: the lease is lost, its listeners run

      worker.join(15_000);
      assertFalse(worker.isAlive(), "the statement was not cancelled");
      LeaseLostSQLException e = assertInstanceOf(LeaseLostSQLException.class, statementError.get());
      assertEquals(LeaseLostSQLException.POISONED, e.getSQLState());
      assertEquals(LeaseLostSQLException.POISONED, commitError.get().getSQLState());
      assertEquals(1, f.poisoned.get());
      assertEquals(0, f.count(null), "the poisoned transaction was rolled back");
    }
  }

  /** Waits (with a deadline) until the long query is running on the server. */
  private static void awaitRunning(Fixture f, TestDatabase db, CountDownLatch running, String query)
      throws Exception {
    if (db.isSqlite()) {
      assertTrue(running.await(10, TimeUnit.SECONDS));
      return;
    }
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
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
    throw new AssertionError("the long query never started");
  }
}
