package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.OnPostgresql;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Red-team repros (review of issue 25's fence). Each test FAILS while its hole exists: it asserts
 * what the invariant requires (the stale write is refused), not what the code does today.
 */
class ReviewFenceHolesTest {

  private static final AtomicInteger IDS = new AtomicInteger();

  /**
   * MariaDB with allowMultiQueries: one text whose first statement commits implicitly (CREATE
   * TEMPORARY SEQUENCE, which the lexer reads as an ordinary statement) and whose second opens a
   * new transaction. The verify's share lock is gone, yet the last OK packet says "in transaction",
   * so the commit is not "in doubt" and runs without a proof after a successor claimed.
   */
  @OnMySqlFamily
  void anImplicitCommitInsideAMultiStatementTextIsNotAStaleCommit(TestDatabase db)
      throws Exception {
    implicitCommitThenAWrite(
        new Fixture(db, 3, true),
        (s, seq, insert) -> s.execute("CREATE TEMPORARY SEQUENCE " + seq + "; " + insert));
  }

  /**
   * The same without allowMultiQueries: a Statement batch whose first entry commits implicitly
   * (CREATE TEMPORARY SEQUENCE) and whose second writes in the new transaction the server opens.
   * The fence looks at the server's flag only before and after the whole batch; afterwards it says
   * "in transaction" again.
   */
  @OnMySqlFamily
  void anImplicitCommitInsideABatchIsNotAStaleCommit(TestDatabase db) throws Exception {
    implicitCommitThenAWrite(
        new Fixture(db, 3),
        (s, seq, insert) -> {
          s.addBatch("CREATE TEMPORARY SEQUENCE " + seq); // commits: the lock is gone
          s.addBatch(insert); // a new transaction
          s.executeBatch();
        });
  }

  /** Sends a sequence's implicit commit and an INSERT in one call ({@code send}). */
  @FunctionalInterface
  interface ImplicitCommit {
    void send(Statement s, String sequence, String insert) throws SQLException;
  }

  /**
   * A verified transaction that then sends an implicit commit and a write in one call: refused
   * before it was sent (the lexer knows the sequence commits), or its commit is refused after a
   * successor's claim; either way no stale row.
   */
  private static void implicitCommitThenAWrite(Fixture fixture, ImplicitCommit send)
      throws Exception {
    try (Fixture f = fixture) {
      Lease lease = f.holding("m" + IDS.incrementAndGet());
      String seq = TestDatabase.uniqueTable("ts");
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term()); // verified, under STRICT's share lock
        boolean refused = false;
        try (Statement s = c.createStatement()) {
          send.send(s, seq, "INSERT INTO " + f.data + " (id, term) VALUES (2, 0)");
        } catch (LeaseLostSQLException e) {
          // the lexer knows the sequence commits: mixed with a write, refused before it was sent
          assertEquals(LeaseLostSQLException.TRANSACTION_CONTROL_MIXED, e.getSQLState());
          refused = true;
        }
        if (!refused) {
          f.takeOver(lease); // goes through at once: nothing holds the lease row any more
          assertThrows(LeaseLostSQLException.class, c::commit, "the stale write must be refused");
        }
        c.rollback();
      }
      assertEquals(0, f.count("id = 2"), "a stale write committed after the successor's claim");
    }
  }

  /**
   * A driver connection handed out by vendor unwrap inside a transaction (allowed after a verify):
   * its commit() ends the verified transaction and frees the lock, its next statement opens a new
   * one. The fenced commit() trusts its picture (server: "in transaction") and commits it without a
   * proof. The design promises "if one [raw object] does [leave], the commit rule still holds".
   */
  @OnEveryServer
  void aCommitThroughAnUnwrappedConnectionDoesNotLetTheFencedCommitThrough(TestDatabase db)
      throws Exception {
    Class<? extends Connection> vendor =
        Class.forName(
                db == TestDatabase.MARIADB
                    ? "org.mariadb.jdbc.Connection"
                    : db == TestDatabase.POSTGRESQL
                        ? "org.postgresql.jdbc.PgConnection"
                        : "com.mysql.cj.jdbc.JdbcConnection")
            .asSubclass(Connection.class);
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("u" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term()); // verified, under STRICT's share lock
        Connection raw = c.unwrap(vendor);
        raw.commit(); // while the lease is held: legitimate, and the lock is gone
        try (Statement s = raw.createStatement()) {
          s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (2, 0)");
        }
        f.takeOver(lease);
        assertThrows(LeaseLostSQLException.class, c::commit, "the stale write must be refused");
        c.rollback(); // the connection was retired with the transaction: a no-op
        assertTrue(c.isClosed(), db + ": the connection of the unwrapped one was retired");
      }
      assertEquals(0, f.count("id = 2"), "a stale write committed after the successor's claim");
    }
  }

  /**
   * PostgreSQL: a read-only transaction gets the plain verify (no lock) and its commit carries no
   * proof. NOTIFY is allowed in a read-only transaction and is delivered at commit: the holder's
   * notification reaches listeners after the successor's claim committed (invariant 3: nothing
   * verified under term t commits after term t+1's claim).
   */
  @OnPostgresql
  void aNotifyInAReadOnlyTransactionIsNotDeliveredAfterTheTakeover(TestDatabase db)
      throws Exception {
    String channel = TestDatabase.uniqueTable("ch");
    try (Fixture f = new Fixture(db, 3);
        Connection listener = db.unpooled().getConnection()) {
      listener.setAutoCommit(true);
      try (Statement s = listener.createStatement()) {
        s.execute("LISTEN " + channel);
      }
      Lease lease = f.holding("n" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection()) {
        c.setReadOnly(true);
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("NOTIFY " + channel + ", 'stale'"); // verified: the lease is held now
        }
        f.takeOver(lease); // no lock in a read-only transaction: goes through at once
        try {
          c.commit();
        } catch (LeaseLostSQLException expected) {
          c.rollback();
        }
        c.setReadOnly(false);
      }
      try (Statement s = listener.createStatement()) {
        s.execute("SELECT 1"); // pgjdbc reads pending notifications with the next response
      }
      org.postgresql.PGNotification[] got =
          listener.unwrap(org.postgresql.PGConnection.class).getNotifications(1000);
      assertEquals(
          0,
          got == null ? 0 : got.length,
          "the stale holder's notification was delivered after the successor's claim");
    }
  }

  /**
   * MariaDB (10.6+) releases a transaction's shared locks at XA PREPARE, STRICT's share lock on the
   * lease row included (measured here on 10.11 with the mariadb client, in REPEATABLE READ and READ
   * COMMITTED). A branch verified under term t and prepared therefore no longer holds the claim of
   * term t+1 back; the transaction manager then commits the branch (XA COMMIT from its own,
   * unleased connection, as JTA recovery does) after the successor's claim. PostgreSQL keeps row
   * locks in a prepared transaction, so PREPARE TRANSACTION does not have this problem.
   */
  @OnMySqlFamily
  void anXaBranchPreparedUnderTheLeaseStillHoldsTheClaimBack(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("x" + IDS.incrementAndGet());
      String xid = "'" + TestDatabase.uniqueTable("xa") + "'";
      boolean tookOver;
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        // unpooled: closing disconnects, and MariaDB detaches the prepared branch (as when the
        // holder's process dies between prepare and commit); XA COMMIT from another connection
        // finds it only then
        try (Connection c =
                FencedDataSource.wrap(db.unpooled(), f.options().build()).getConnection();
            Statement s = c.createStatement()) {
          s.execute("XA START " + xid);
          s.executeUpdate("INSERT INTO " + f.data + " (id, term) VALUES (2, " + lease.term() + ")");
          s.execute("XA END " + xid);
          try {
            s.execute("XA PREPARE " + xid);
          } catch (java.sql.SQLException refused) {
            return; // a fence that refuses XA PREPARE under STRICT closes the hole too
          }
        }
        // the successor's claim, bounded: under STRICT it must wait for the prepared branch
        try (Connection other = db.unpooled().getConnection();
            Statement s = other.createStatement()) {
          tookOver = f.takeOverWaiting(other, lease);
          // the transaction manager commits the prepared branch from its own connection
          s.execute("XA COMMIT " + xid);
        }
      }
      org.junit.jupiter.api.Assertions.assertFalse(
          tookOver && f.count("id = 2") == 1,
          "a branch verified under term t committed after the claim of term t+1 (XA PREPARE"
              + " released STRICT's share lock)");
    }
  }
}
