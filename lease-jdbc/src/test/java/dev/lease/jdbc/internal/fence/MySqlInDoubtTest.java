package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * MySQL/MariaDB: batches, multi-statement texts and driver objects handed out by unwrap leave the
 * verified transaction in doubt (the commit verifies again), and XA PREPARE is refused under STRICT
 * (the review holes of {@link ReviewFenceHolesTest}); each with its negative control.
 */
class MySqlInDoubtTest {

  private static final AtomicInteger IDS = new AtomicInteger();

  /**
   * A batch and a multi-statement text whose implicit commit the lexer does not see
   * (UNKNOWN_IMPLICIT_COMMITS stands in for a statement the lexer does not know commits): the
   * commit after it verifies again and is refused.
   */
  @OnMySqlFamily
  void aBatchOrMultiStatementTextLeavesTheTransactionInDoubt(TestDatabase db) throws Exception {
    assertAll(
        () -> assertEquals(0, stale(db, true, false), "batch: a stale write committed"),
        () -> assertEquals(0, stale(db, false, false), "text: a stale write committed"));
  }

  /** Negative control: without the re-verify after a batch or text the stale write commits. */
  @OnMySqlFamily
  void controlWithoutTheReverifyTheStaleWriteCommits(TestDatabase db) throws Exception {
    assertAll(
        () -> assertEquals(1, stale(db, true, true), "batch: the control let nothing through"),
        () -> assertEquals(1, stale(db, false, true), "text: the control let nothing through"));
  }

  private int stale(TestDatabase db, boolean batch, boolean weakened) throws Exception {
    try (Fixture f = new Fixture(db, 3, true)) {
      Lease lease = f.holding("b" + IDS.incrementAndGet());
      FencingOptions.Builder o =
          WeakenedFence.weaken(f.options(), WeakenedFence.UNKNOWN_IMPLICIT_COMMITS);
      if (weakened) {
        WeakenedFence.weaken(o, WeakenedFence.NO_REVERIFY);
      }
      String seq = TestDatabase.uniqueTable("ts");
      String insert = "INSERT INTO " + f.data + " (id, term) VALUES (2, 0)";
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(o.build()).getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        try (Statement s = c.createStatement()) {
          if (batch) {
            s.addBatch("CREATE TEMPORARY SEQUENCE " + seq); // commits: the lock is gone
            s.addBatch(insert); // a new transaction
            s.executeBatch();
          } else {
            s.execute("CREATE TEMPORARY SEQUENCE " + seq + "; " + insert);
          }
        }
        f.takeOver(lease);
        if (weakened) {
          c.commit();
        } else {
          assertThrows(LeaseLostSQLException.class, c::commit, "the stale write must be refused");
          c.rollback();
        }
      }
      return f.count("id = 2");
    }
  }

  /** A healthy holder's batch and multi-statement text commit (the re-verify passes). */
  @OnMySqlFamily
  void aHeldLeasesBatchAndTextCommit(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3, true)) {
      Lease lease = f.holding("h" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        try (Statement s = c.createStatement()) {
          s.addBatch("INSERT INTO " + f.data + " (id, term) VALUES (2, 0)");
          s.addBatch("INSERT INTO " + f.data + " (id, term) VALUES (3, 0)");
          s.executeBatch();
          s.execute(
              "INSERT INTO "
                  + f.data
                  + " (id, term) VALUES (4, 0); INSERT INTO "
                  + f.data
                  + " (id, term) VALUES (5, 0)");
        }
        f.insert(c, 6, lease.term());
        c.commit();
      }
      assertEquals(6, f.count(null));
    }
  }

  /** Negative control: without the re-verify after unwrap the raw connection's write commits. */
  @OnMySqlFamily
  void controlWithoutTheReverifyAnUnwrappedCommitLetsTheStaleWriteThrough(TestDatabase db)
      throws Exception {
    Class<? extends Connection> vendor =
        Class.forName(
                db == TestDatabase.MARIADB
                    ? "org.mariadb.jdbc.Connection"
                    : "com.mysql.cj.jdbc.JdbcConnection")
            .asSubclass(Connection.class);
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("u" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c =
              f.fenced(WeakenedFence.weaken(f.options(), WeakenedFence.NO_REVERIFY).build())
                  .getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        Connection raw = c.unwrap(vendor);
        raw.commit();
        try (Statement s = raw.createStatement()) {
          s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (2, 0)");
        }
        f.takeOver(lease);
        c.commit();
      }
      assertEquals(1, f.count("id = 2"), "the control did not let the stale write through");
    }
  }

  /** XA PREPARE under STRICT is refused with a message that says what to do instead. */
  @OnMySqlFamily
  void xaPrepareIsRefusedAndOnePhaseCommits(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("x" + IDS.incrementAndGet());
      String xid = "'" + TestDatabase.uniqueTable("xa") + "'";
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement()) {
        s.execute("XA START " + xid);
        s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (2, " + lease.term() + ")");
        s.execute("XA END " + xid);
        LeaseLostSQLException e =
            assertThrows(LeaseLostSQLException.class, () -> s.execute("XA PREPARE " + xid));
        assertAll(
            () -> assertEquals(LeaseLostSQLException.TRANSACTION_CONTROL_MIXED, e.getSQLState()),
            () -> assertTrue(e.getMessage().contains("ONE PHASE"), e.getMessage()));
        s.execute("XA COMMIT " + xid + " ONE PHASE"); // the branch is as it was: IDLE
      }
      assertEquals(1, f.count("id = 2"));
    }
  }

  /**
   * Negative control: XA PREPARE let through (NO_COMMIT_CHECKS) frees STRICT's lock, and the
   * successor's claim goes through before the branch commits.
   */
  @OnMySqlFamily
  void controlAPreparedBranchLetsTheSuccessorClaim(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("y" + IDS.incrementAndGet());
      String xid = "'" + TestDatabase.uniqueTable("xa") + "'";
      boolean tookOver;
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        try (Connection c =
                FencedDataSource.wrap(
                        db.unpooled(),
                        WeakenedFence.weaken(f.options(), WeakenedFence.NO_COMMIT_CHECKS).build())
                    .getConnection();
            Statement s = c.createStatement()) {
          s.execute("XA START " + xid);
          s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (2, " + lease.term() + ")");
          s.execute("XA END " + xid);
          s.execute("XA PREPARE " + xid);
        }
        try (Connection other = db.unpooled().getConnection();
            Statement s = other.createStatement()) {
          tookOver = f.takeOverWaiting(other, lease);
          s.execute("XA COMMIT " + xid);
        }
      }
      assertTrue(
          tookOver && f.count("id = 2") == 1,
          "the control did not commit the prepared branch after the successor's claim");
    }
  }
}
