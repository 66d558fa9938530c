package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Why STRICT on PostgreSQL keeps {@code FOR KEY SHARE} on the lease row rather than a
 * transaction-scoped shared advisory lock, which would write no WAL (issue 36; the measurements are
 * in docs/benchmarks.md). The race both must win: the holder's verify waits behind a successor's
 * step (a transfer, which gives the row a new term while the old expiry is still ahead) that then
 * commits. The row lock makes PostgreSQL look at the newest row version: in REPEATABLE READ the
 * verify fails with a serialization error, and the holder's transaction commits nothing. An
 * advisory lock is taken by a function inside a query, after the query's snapshot, and in
 * REPEATABLE READ or SERIALIZABLE the whole transaction reads that snapshot: the verify's read
 * after the wait sees the row as it was before the transfer and passes. It would hold only in READ
 * COMMITTED with the lock in a statement of its own, and the fence does not trust the session to
 * say which isolation a transaction runs at ({@code SET TRANSACTION} as SQL, a session default).
 */
class StrictLockChoiceTest {

  private static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofSeconds(20))
          .renewInterval(Duration.ofSeconds(2))
          .localDeadline(Duration.ofSeconds(12))
          .attemptTimeout(Duration.ofSeconds(10))
          .gracePeriod(Duration.ofSeconds(1))
          .build();

  /** The class id the advisory design would have used, and the lease's key in it. */
  private static final String ADVISORY_KEY = "1279870292, pg_catalog.hashtext('t')";

  /** A successor's step, left open: the row lock a transfer takes, then its new term. */
  private static Connection openTransfer(Fixture f, Lease old, boolean advisory)
      throws SQLException {
    Connection x = f.pool.getConnection();
    x.setAutoCommit(false);
    try (Statement s = x.createStatement()) {
      if (advisory) {
        s.execute("SELECT pg_catalog.pg_advisory_xact_lock(" + ADVISORY_KEY + ")");
      }
      s.execute("SELECT term FROM " + f.leaseTable + " WHERE name = 't' FOR UPDATE");
      s.executeUpdate(
          "UPDATE "
              + f.leaseTable
              + " SET holder = 'successor', term = "
              + (old.term() + 1)
              + " WHERE name = 't'");
    }
    return x;
  }

  /** Work that may wait for a lock. */
  @FunctionalInterface
  interface Work<T> {
    T run() throws SQLException;
  }

  /**
   * Runs {@code work} on another thread while the successor's step {@code x} holds its lock, checks
   * (a bounded look) that it waits for it, then commits the step: the future holds what the work
   * did once the lock was released.
   */
  private static <T> CompletableFuture<T> behindTheTransfer(Connection x, Work<T> work, String what)
      throws Exception {
    CompletableFuture<T> f =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return work.run();
              } catch (SQLException e) {
                throw new IllegalStateException(e);
              }
            });
    assertThrows(TimeoutException.class, () -> f.get(300, TimeUnit.MILLISECONDS), what);
    x.commit();
    return f;
  }

  @Test
  @DisplayName(
      "postgresql: FOR KEY SHARE refuses a REPEATABLE READ verify that waited for a transfer")
  void forKeyShareRefusesARepeatableReadVerifyThatWaitedForATransfer() throws Exception {
    try (Fixture f = new Fixture(TestDatabase.POSTGRESQL, 4)) {
      LeaseManager a = f.manager("a", TIMINGS);
      Lease old = a.tryClaim("t").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      try (Connection x = openTransfer(f, old, false);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        CompletableFuture<Boolean> write =
            behindTheTransfer(
                x,
                () -> {
                  try (LeaseContext.Scope scope = LeaseContext.bind(old)) {
                    f.insert(c, 1, old.term());
                    c.commit();
                    return true;
                  }
                },
                "the verify waits for the transfer's row lock");
        ExecutionException e =
            assertThrows(ExecutionException.class, () -> write.get(20, TimeUnit.SECONDS));
        assertTrue(e.getCause().getCause() instanceof SQLException, "refused: " + e);
        c.rollback();
      }
      assertEquals(0, f.count("id = 1"), "nothing of the old holder's transaction committed");
    }
  }

  /**
   * The advisory design's verify, as its statements would be: the shared lock in a statement of its
   * own, then the read of the row. In REPEATABLE READ the read after the wait passes on the row the
   * transfer replaced, so the old holder's transaction would commit after its successor's term.
   */
  @Test
  @DisplayName("postgresql: an advisory-lock verify passes on a stale row in REPEATABLE READ")
  void anAdvisoryLockVerifyPassesOnAStaleRowInRepeatableRead() throws Exception {
    try (Fixture f = new Fixture(TestDatabase.POSTGRESQL, 4)) {
      LeaseManager a = f.manager("a", TIMINGS);
      Lease old = a.tryClaim("t").orElseThrow();
      assertTrue(advisoryVerifyAfterTransfer(f, old, Connection.TRANSACTION_REPEATABLE_READ));
    }
  }

  /** In READ COMMITTED the same statements refuse: the read takes a snapshot after the wait. */
  @Test
  @DisplayName("postgresql: an advisory-lock verify refuses in READ COMMITTED")
  void anAdvisoryLockVerifyRefusesInReadCommitted() throws Exception {
    try (Fixture f = new Fixture(TestDatabase.POSTGRESQL, 4)) {
      LeaseManager a = f.manager("a", TIMINGS);
      Lease old = a.tryClaim("t").orElseThrow();
      assertFalse(advisoryVerifyAfterTransfer(f, old, Connection.TRANSACTION_READ_COMMITTED));
    }
  }

  /** Whether the advisory design's verify, waiting behind a transfer, found the old holder. */
  private static boolean advisoryVerifyAfterTransfer(Fixture f, Lease old, int isolation)
      throws Exception {
    try (Connection x = openTransfer(f, old, true);
        Connection h = f.pool.getConnection()) {
      h.setAutoCommit(false);
      h.setTransactionIsolation(isolation);
      CompletableFuture<Boolean> verify =
          behindTheTransfer(
              x,
              () -> {
                try (Statement s = h.createStatement()) {
                  s.execute("SELECT pg_catalog.pg_advisory_xact_lock_shared(" + ADVISORY_KEY + ")");
                  try (PreparedStatement ps =
                      h.prepareStatement(
                          "SELECT term FROM "
                              + f.leaseTable
                              + " WHERE name = 't' AND holder = ? AND term = ?")) {
                    ps.setString(1, old.holder());
                    ps.setLong(2, old.term());
                    try (ResultSet rs = ps.executeQuery()) {
                      return rs.next();
                    }
                  }
                }
              },
              "the advisory verify waits for the transfer's exclusive lock");
      boolean found = verify.get(20, TimeUnit.SECONDS);
      h.rollback();
      return found;
    }
  }
}
