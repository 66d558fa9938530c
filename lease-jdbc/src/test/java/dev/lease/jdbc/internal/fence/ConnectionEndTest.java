package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * How fenced transactions end when the application does not end them itself: a connection closed
 * with a verified transaction open, a lease released under an open VERIFY transaction, poison
 * across {@code setAutoCommit(false)}.
 */
class ConnectionEndTest {

  /**
   * The holder writes under its lease and closes the connection without committing; the next
   * borrower of the same physical connection, with no lease, commits. The fenced connection rolled
   * the stale transaction back at close, so nothing of it commits. Negative control: the same flow
   * without the fence commits the first borrower's row, and the same count catches it.
   */
  @OnEveryDatabase
  void closingAFencedConnectionRollsBackItsTransactionWhenThePoolWouldNot(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      LeaseManager m = f.manager("holder", LeaseTimings.DEFAULTS);
      Lease lease = m.tryClaim("close-test").orElseThrow();
      assertEquals(0, staleRowsAfterNextBorrowerCommits(f, lease, true, 1));
      assertEquals(
          1,
          staleRowsAfterNextBorrowerCommits(f, lease, false, 2),
          "negative control: without the fence the next borrower commits the stale row");
    }
  }

  private static int staleRowsAfterNextBorrowerCommits(
      Fixture f, Lease lease, boolean fenced, int id) throws Exception {
    try (NoRollbackOnReturn pool = new NoRollbackOnReturn(f.pool)) {
      DataSource ds = fenced ? FencedDataSource.wrap(pool) : pool;
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, id, lease.term());
        // no commit, no rollback: the connection goes back to the pool with the transaction open
      }
      try (Connection next = ds.getConnection()) {
        next.setAutoCommit(false);
        try (Statement s = next.createStatement()) {
          s.executeQuery("SELECT 1").close();
        }
        next.commit();
      }
    }
    return f.count("id = " + id);
  }

  /**
   * VERIFY mode orders nothing in the database, and a release makes the lease claimable at once: a
   * transaction verified before the release must not commit after it. (Under STRICT a release from
   * another connection waits for the holder's open transactions on MySQL, MariaDB and SQLite, whose
   * verify lock conflicts with it: release a lease after its transactions end.)
   */
  @OnEveryDatabase
  void verifyModeRefusesTheCommitOfATransactionWhoseLeaseWasReleased(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      LeaseManager m = f.manager("holder", LeaseTimings.DEFAULTS);
      FencedDataSource verifyMode = f.fenced(f.options().mode(FencingMode.VERIFY).build());
      Lease lease = m.tryClaim("release-test").orElseThrow();
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = verifyMode.getConnection()) {
        c.setAutoCommit(false);
        if (db.isSqlite()) {
          // a write would hold SQLite's one write lock and the release would wait for it
          assertEquals(0, f.count(c, "id = 1"));
        } else {
          f.insert(c, 1, lease.term());
        }
        assertEquals(1, f.verified.get());
        lease.release();
        LeaseLostSQLException refused = assertThrows(LeaseLostSQLException.class, c::commit);
        assertEquals(LeaseLostSQLException.REFUSED, refused.getSQLState());
        c.rollback();
      }
      assertEquals(0, f.count("id = 1"), "nothing of the refused transaction committed");
    }
  }

  /**
   * A transaction begun with BEGIN as SQL and refused stays poisoned across setAutoCommit(false).
   * Not on SQLite: sqlite-jdbc's setAutoCommit(false) itself runs BEGIN, which fails there.
   */
  @OnEveryServer
  void poisonSurvivesSetAutoCommitFalse(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      LeaseManager m = f.manager("holder", LeaseTimings.DEFAULTS);
      FencedDataSource ds = f.fenced(f.options().build());
      Lease lease = m.tryClaim("poison-test").orElseThrow();
      f.takeOver(lease);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        try (Statement s = c.createStatement()) {
          s.execute("BEGIN");
        }
        assertEquals(
            LeaseLostSQLException.REFUSED,
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, lease.term()))
                .getSQLState());
        c.setAutoCommit(false);
        assertEquals(
            LeaseLostSQLException.POISONED,
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, lease.term()))
                .getSQLState());
        c.rollback();
      }
      assertEquals(0, f.count("id = 1"));
    }
  }
}
