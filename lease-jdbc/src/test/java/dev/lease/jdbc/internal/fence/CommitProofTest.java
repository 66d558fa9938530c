package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.PgWire;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Issue 36: on PostgreSQL a STRICT commit proves itself only when the fence doubts its verify's
 * lock ({@link Doubt}), as on the other databases; out of doubt the lock, held since the verify,
 * orders the commit before a successor's claim, and the commit sends what a raw one sends. Each
 * doubt PostgreSQL can meet is shown refusing a stale write beside a control that ignores the doubt
 * ({@link WeakenedFence#NO_REVERIFY}) and commits it: the driver object here, the savepoint
 * rollback in {@code ServerEndedTransactionTest}. A failed statement cannot free the lock of a
 * verified PostgreSQL transaction (an error aborts it; with pgjdbc's {@code autosave} the savepoint
 * comes after the verify, and a failed first statement that carried the verify leaves the
 * transaction unverified: {@code PiggybackVerifyTest}); its doubt is shown on MySQL and MariaDB
 * ({@code ServerEndedTransactionTest}), as the routine's ({@code RoutineTest}) and the unread
 * text's ({@code MySqlInDoubtTest}).
 */
class CommitProofTest {

  private static final AtomicInteger IDS = new AtomicInteger(100);

  private static Fixture pg() throws SQLException {
    return new Fixture(TestDatabase.POSTGRESQL, 3);
  }

  @Test
  @DisplayName(
      "postgresql: out of doubt a STRICT commit sends no proof: one statement more than raw")
  void outOfDoubtAStrictCommitSendsNoProof() throws Exception {
    try (Fixture f = pg();
        PgWire wire = new PgWire("127.0.0.1", 5432)) {
      Lease lease = f.holding("cost");
      UrlDataSource direct = new UrlDataSource(wire.url());
      long raw = statements(f, wire, direct, null);
      long fenced = statements(f, wire, FencedDataSource.wrap(direct, f.options().build()), lease);
      // the baseline before issue 36: the same commit with the verify in its round trip
      long everyCommit =
          statements(
              f,
              wire,
              FencedDataSource.wrap(
                  direct,
                  WeakenedFence.weaken(f.options(), WeakenedFence.PROVES_EVERY_COMMIT).build()),
              lease);
      assertEquals(3, raw, "BEGIN, the UPDATE, COMMIT");
      assertEquals(raw + 1, fenced, "the verify (carried with the UPDATE), nothing at the commit");
      assertEquals(fenced + 1, everyCommit, "control: the count sees a commit's proof");
    }
  }

  /**
   * Statements the server ran for a 1-statement transaction (a prepared UPDATE, then commit), the
   * same in each of 5.
   */
  private static long statements(Fixture f, PgWire wire, javax.sql.DataSource ds, Lease lease)
      throws Exception {
    int id = IDS.incrementAndGet();
    try (Connection c = ds.getConnection()) {
      f.insert(c, id, 0);
      long first = -1;
      try (LeaseContext.Scope scope = lease == null ? null : LeaseContext.bind(lease)) {
        c.setAutoCommit(false);
        for (int i = 0; i < 5; i++) {
          long before = wire.executes();
          try (PreparedStatement ps =
              c.prepareStatement("UPDATE " + f.data + " SET term = ? WHERE id = ?")) {
            ps.setLong(1, i);
            ps.setInt(2, id);
            ps.executeUpdate();
          }
          c.commit();
          long n = wire.executes() - before;
          first = first < 0 ? n : first;
          assertEquals(first, n, "every transaction alike");
        }
      }
      return first;
    }
  }

  // ---- Doubt.DRIVER_OBJECT

  @Test
  @DisplayName(
      "postgresql: a driver object that commits and opens a new transaction leaves the commit in"
          + " doubt: the stale write is refused")
  void aDriverObjectLeavesTheCommitInDoubt() throws Exception {
    try (Fixture f = pg()) {
      assertEquals("refused", driverObjectOpensANewTransaction(f, f.options().build()));
    }
  }

  @Test
  @DisplayName(
      "postgresql: control: ignoring the driver object's doubt, the commit sends no proof and the"
          + " stale write commits")
  void controlIgnoringTheDriverObjectTheStaleWriteCommits() throws Exception {
    try (Fixture f = pg()) {
      assertEquals(
          "committed",
          driverObjectOpensANewTransaction(
              f, WeakenedFence.weaken(f.options(), WeakenedFence.NO_REVERIFY).build()));
    }
  }

  /**
   * A verified transaction hands out pgjdbc's connection, which commits and opens a transaction of
   * its own ({@code COMMIT}, then a query: pgjdbc begins one): the verify's lock is gone, while the
   * driver reports a transaction open, as before. A successor takes the lease; the holder writes
   * through the fenced connection and commits.
   */
  private static String driverObjectOpensANewTransaction(Fixture f, FencingOptions options)
      throws Exception {
    Lease lease = f.holding("unwrap");
    int first = IDS.incrementAndGet();
    int stale = IDS.incrementAndGet();
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = f.fenced(options).getConnection()) {
      c.setAutoCommit(false);
      f.insert(c, first, lease.term()); // verified: FOR KEY SHARE on the lease row
      assertFalse(f.pgLeaseRowFree(), "the verify holds the lease row");
      Connection driver = (Connection) c.unwrap(org.postgresql.PGConnection.class);
      try (Statement s = driver.createStatement()) {
        s.execute("COMMIT");
        s.execute("SELECT 1"); // pgjdbc begins a new transaction for it
      }
      assertTrue(f.pgLeaseRowFree(), "the driver's COMMIT ended the verified transaction");
      f.takeOver(lease);
      try {
        f.insert(c, stale, lease.term());
        c.commit();
      } catch (LeaseLostSQLException e) {
        assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState(), e.toString());
        return f.count("id = " + stale) == 0 ? "refused" : "refused, yet written";
      }
    }
    return f.count("id = " + stale) == 1 ? "committed" : "lost";
  }
}
