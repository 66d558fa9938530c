package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Issue 9, paths 3 and 4: the server ends the verified transaction, or the verify's lock, without
 * the fence being told. A MySQL/MariaDB deadlock rolls the whole transaction back (as a lock-wait
 * timeout does with innodb_rollback_on_timeout, and a reconnect, which reaches the application as
 * an error first); a savepoint rolled back past the verify frees PostgreSQL's row lock. In each
 * case the next statement must verify again: the negative controls show the stale holder's write
 * committing after the takeover when it does not.
 */
class ServerEndedTransactionTest {

  private static void update(Connection c, String table, int id, String note) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("UPDATE " + table + " SET note = ? WHERE id = ?")) {
      ps.setString(1, note);
      ps.setInt(2, id);
      ps.executeUpdate();
    }
  }

  // ---- a real deadlock (MySQL, MariaDB)

  @OnMySqlFamily
  void afterADeadlockRolledTheTransactionBackTheNextStatementVerifiesAgain(TestDatabase db)
      throws Exception {
    assertEquals("refused", afterDeadlock(db, f -> f.options().build()));
  }

  /** Negative control: trusting the verify's lock after the deadlock commits after takeover. */
  @OnMySqlFamily
  void negativeControlWithoutReverifyTheStaleWriteCommitsAfterTheDeadlock(TestDatabase db)
      throws Exception {
    assertEquals(
        "committed",
        afterDeadlock(
            db,
            f ->
                WeakenedFence.weaken(
                        f.options(), WeakenedFence.PREVIOUS_REFUSAL, WeakenedFence.NO_REVERIFY)
                    .build()));
  }

  interface Options {
    FencingOptions of(Fixture f);
  }

  /**
   * The holder's verified transaction is chosen as a deadlock's victim (the other transaction is
   * made heavier, and InnoDB rolls back the lighter), its successor takes the lease over, and the
   * holder writes again and commits. Returns what became of that write.
   */
  private static String afterDeadlock(TestDatabase db, Options options) throws Exception {
    try (Fixture f = new Fixture(db, 4)) {
      Lease lease = f.holding("deadlock");
      try (Connection c = f.pool.getConnection()) {
        f.insert(c, 1, 0);
        f.insert(c, 2, 0);
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
      FencedDataSource ds = f.fenced(options.of(f));
      try (Connection holder = ds.getConnection();
          Connection other = f.pool.getConnection()) {
        other.setAutoCommit(false);
        AtomicReference<SQLException> victim = new AtomicReference<>();
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          holder.setAutoCommit(false);
          update(holder, f.data, 1, "holder"); // verified: share lock on the lease row, row 1
          assertEquals(1, f.verified.get());
        }
        for (int i = 0; i < 50; i++) {
          f.insert(other, 1000 + i, 0); // weight: InnoDB rolls back the lighter transaction
        }
        update(other, f.data, 2, "other");
        CountDownLatch done = new CountDownLatch(1);
        Thread waiting =
            new Thread(
                () -> {
                  try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
                    update(holder, f.data, 2, "holder"); // waits for the other's row 2
                  } catch (SQLException e) {
                    victim.set(e);
                  } finally {
                    done.countDown();
                  }
                },
                "holder-waits");
        // the probe's own connection, outside the pool the holder, the other and the lease
        // manager share (a busy pool once kept the probe waiting past its deadline)
        try (Connection probe = db.unpooled().getConnection()) {
          waiting.start();
          if (!awaitLockWait(probe)) {
            throw new AssertionError(
                "the holder never waited for the lock; its statement "
                    + (done.getCount() == 0
                        ? "ended: " + victim.get()
                        : "is still running at "
                            + java.util.Arrays.toString(waiting.getStackTrace())));
          }
        }
        try {
          update(other, f.data, 1, "other"); // closes the cycle
        } catch (SQLException e) {
          throw new AssertionError("InnoDB chose the other transaction as the victim", e);
        }
        assertTrue(done.await(20, TimeUnit.SECONDS));
        assertNotNull(victim.get(), "the holder was not chosen as the deadlock's victim");
        assertEquals(1213, victim.get().getErrorCode(), victim.get().toString());
        other.commit();
        f.takeOver(lease); // the verify's lock went with the rollback: nothing makes this wait
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          f.insert(holder, 3, lease.term());
          holder.commit();
        } catch (LeaseLostSQLException e) {
          assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
          holder.rollback();
          assertEquals(0, f.count("id = 3"));
          return "refused";
        }
      }
      return f.count("id = 3") == 1 ? "committed" : "lost";
    }
  }

  /** Waits (with a deadline) until a transaction waits for a row lock. */
  private static boolean awaitLockWait(Connection c) throws SQLException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() - deadline < 0) {
      try (Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT COUNT(*) FROM information_schema.INNODB_TRX"
                      + " WHERE trx_state = 'LOCK WAIT'")) {
        rs.next();
        if (rs.getInt(1) > 0) {
          return true;
        }
      }
      // InnoDB refreshes its INFORMATION_SCHEMA transaction cache only when it was last read more
      // than 0.1 s ago: polled faster, it never shows the wait
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(150));
    }
    return false;
  }

  // ---- a savepoint rolled back past the verify (PostgreSQL frees the row lock)

  @OnEveryDatabase
  void aSavepointRolledBackPastTheVerifyIsFollowedByAnotherVerify(TestDatabase db)
      throws Exception {
    for (boolean asSql : new boolean[] {false, true}) {
      try (Fixture f = new Fixture(db, 3)) {
        Lease lease = f.holding("sp");
        String outcome = savepointPastTheVerify(f, lease, f.options().build(), asSql);
        assertEquals("refused", outcome, asSql ? "ROLLBACK TO as SQL" : "rollback(Savepoint)");
      }
    }
  }

  /**
   * Negative control on PostgreSQL, where the rollback frees the verify's row lock: without the
   * second verify the write after the takeover commits.
   */
  @OnEveryDatabase
  void negativeControlWithoutReverifyAWriteAfterTheSavepointRollbackCommits(TestDatabase db)
      throws Exception {
    if (db != TestDatabase.POSTGRESQL) {
      return; // InnoDB and SQLite keep their locks until the transaction ends
    }
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("sp");
      FencingOptions weak =
          WeakenedFence.weaken(
                  f.options(), WeakenedFence.PREVIOUS_REFUSAL, WeakenedFence.NO_REVERIFY)
              .build();
      assertEquals("committed", savepointPastTheVerify(f, lease, weak, false));
    }
  }

  /**
   * A transaction opened before the lease was bound sets a savepoint, verifies at its first
   * statement under the lease, rolls back to the savepoint; a successor takes over; the holder
   * writes and commits.
   */
  private static String savepointPastTheVerify(
      Fixture f, Lease lease, FencingOptions options, boolean asSql) throws Exception {
    FencedDataSource ds = f.fenced(options);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      f.count(c, "1 = 1"); // no lease yet: the transaction starts unfenced
      Savepoint sp = asSql ? null : c.setSavepoint("before_verify");
      if (asSql) {
        try (Statement s = c.createStatement()) {
          s.execute("SAVEPOINT before_verify");
        }
      }
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        f.insert(c, 1, lease.term()); // verified here, after the savepoint
        if (f.db == TestDatabase.POSTGRESQL) {
          assertFalse(f.pgLeaseRowFree(), "the verify holds the lease row");
        }
        if (asSql) {
          try (Statement s = c.createStatement()) {
            s.execute("ROLLBACK TO SAVEPOINT before_verify");
          }
        } else {
          c.rollback(sp);
        }
        if (f.db != TestDatabase.POSTGRESQL) {
          // InnoDB and SQLite keep the verify's lock until the transaction ends (a takeover
          // would wait for it); the next statement still verifies again
          f.insert(c, 2, lease.term());
          assertEquals(2, f.verified.get(), "verified again after the savepoint rollback");
          c.commit();
          return "refused"; // nothing to refuse: the lease is held; the count is the check
        }
        assertTrue(f.pgLeaseRowFree(), "PostgreSQL released the verify's lock with the rollback");
        f.takeOver(lease);
        try {
          f.insert(c, 2, lease.term());
          c.commit();
        } catch (LeaseLostSQLException e) {
          assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
          c.rollback();
          return "refused";
        }
      }
    }
    return f.count("id = 2") == 1 ? "committed" : "lost";
  }

  // ---- a failed statement (PostgreSQL with autosave, every database)

  @OnEveryDatabase
  void afterAFailedStatementTheNextStatementVerifiesAgain(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("fail");
      HikariDataSource pool = f.pool;
      if (db == TestDatabase.POSTGRESQL) {
        // with autosave, pgjdbc rolls back to its own savepoint and the transaction goes on
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(db.url() + "&autosave=always");
        cfg.setMaximumPoolSize(1);
        pool = f.closeLater(new HikariDataSource(cfg));
      }
      FencedDataSource ds = FencedDataSource.wrap(pool, f.options().build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        assertThrows(SQLException.class, () -> f.insert(c, 1, lease.term())); // duplicate key
        assertEquals(1, f.verified.get());
        f.insert(c, 2, lease.term());
        assertEquals(2, f.verified.get(), "the statement after the error verified again");
        c.commit();
      }
      assertEquals(2, f.count("id IN (1, 2)"));
    }
  }
}
