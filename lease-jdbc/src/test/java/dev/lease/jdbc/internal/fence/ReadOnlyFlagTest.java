package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.ReadOnlyPolicy;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.OnPostgresql;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Review S1: {@code setReadOnly(true)} is a flag of the driver, not the server's answer. pgjdbc
 * makes the server transaction read-only only when it sends the BEGIN itself, so a BEGIN sent as
 * SQL, or {@code SET TRANSACTION READ WRITE} as the transaction's first statement, leaves a flagged
 * connection's transaction writable; MySQL/MariaDB's {@code START TRANSACTION READ WRITE} does the
 * same. STRICT must still take its lock there, and {@link ReadOnlyPolicy#SKIP} must still verify.
 * sqlite-jdbc refuses the flag on an open connection that was opened writable.
 */
class ReadOnlyFlagTest {

  /** Where the driver lets a flagged connection write: Connector/J refuses DML itself. */
  static Stream<TestDatabase> flagNotEnforcedByTheDriver() {
    return Stream.of(TestDatabase.POSTGRESQL, TestDatabase.MARIADB);
  }

  /** The two ways into a writable transaction on a flagged connection. */
  enum Sequence {
    BEGIN_AS_SQL,
    SET_TRANSACTION_READ_WRITE_FIRST
  }

  private static void begin(Connection c, TestDatabase db, Sequence seq) throws SQLException {
    try (Statement s = c.createStatement()) {
      if (seq == Sequence.BEGIN_AS_SQL) {
        // Connector/J sends SET SESSION TRANSACTION READ ONLY: a plain BEGIN would be read-only
        s.execute(db.isMySqlFamily() ? "START TRANSACTION READ WRITE" : "BEGIN");
      } else {
        c.setAutoCommit(false);
        if (!db.isSqlite()) { // SQLite has no SET TRANSACTION
          s.execute("SET TRANSACTION READ WRITE");
        }
      }
    }
  }

  private static void end(Connection c, Sequence seq) throws SQLException {
    if (seq == Sequence.BEGIN_AS_SQL) {
      try (Statement s = c.createStatement()) {
        s.execute("ROLLBACK");
      }
    } else {
      c.rollback();
      c.setAutoCommit(true);
    }
  }

  // ---- STRICT: the lock

  @OnEveryDatabase
  void aFlaggedConnectionWhoseTransactionCanWriteStillTakesTheLock(TestDatabase db)
      throws Exception {
    assertEquals(List.of(true, true), lockHeld(db, FencingOptions.builder()));
  }

  /** Negative control: taking the flag for the server's answer leaves the lease row free. */
  @OnPostgresql
  void negativeControlTrustingTheFlagTheWriteTakesNoLock(TestDatabase db) throws Exception {
    assertEquals(
        List.of(false, false),
        lockHeld(
            db,
            WeakenedFence.weaken(FencingOptions.builder(), WeakenedFence.TRUST_READ_ONLY_FLAG)));
  }

  /** Per sequence: whether the lease row was locked after a write in the flagged transaction. */
  private static List<Boolean> lockHeld(TestDatabase db, FencingOptions.Builder options)
      throws Exception {
    List<Boolean> held = new ArrayList<>();
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("ro");
      FencedDataSource ds = f.fenced(options.listener(f.counter).build());
      int id = 0;
      for (Sequence seq : Sequence.values()) {
        try (Connection c = ds.getConnection()) {
          if (db.isSqlite()) {
            assertThrows(SQLException.class, () -> c.setReadOnly(true));
            assertFalse(c.isReadOnly());
          } else {
            c.setReadOnly(true);
          }
          try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
            begin(c, db, seq);
            try {
              f.insert(c, ++id, lease.term()); // the server lets it write
            } catch (SQLException e) {
              // Connector/J refuses DML on a flagged connection before sending it (not a CALL);
              // the verify ran before it
              assertTrue(
                  db == TestDatabase.MYSQL && !(e instanceof LeaseLostSQLException), e.toString());
            }
            held.add(!leaseRowFree(f, lease));
            end(c, seq);
          }
        }
      }
      assertTrue(f.verified.get() >= 2, "verified: " + f.verified.get());
    }
    return held;
  }

  /** Whether a claim's FOR UPDATE could lock the lease row now (servers), or write (SQLite). */
  static boolean leaseRowFree(Fixture f, Lease lease) throws SQLException {
    try (Connection c = f.pool.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      try {
        if (f.db.isSqlite()) {
          try (Statement t = c.createStatement()) {
            t.execute("PRAGMA busy_timeout = 0");
          }
          s.executeUpdate(
              "UPDATE " + f.leaseTable + " SET term = term WHERE name = '" + lease.name() + "'");
        } else {
          s.executeQuery(
                  "SELECT name FROM "
                      + f.leaseTable
                      + " WHERE name = '"
                      + lease.name()
                      + "' FOR UPDATE NOWAIT")
              .close();
        }
        return true;
      } catch (SQLException e) {
        return false; // PostgreSQL 55P03, InnoDB lock wait, SQLITE_BUSY
      } finally {
        c.rollback();
        if (f.db.isSqlite()) {
          try (Statement t = c.createStatement()) {
            t.execute("PRAGMA busy_timeout = 10000");
          }
        }
      }
    }
  }

  // ---- SKIP: the verify

  @OnEveryServer
  void skipStillVerifiesAFlaggedTransactionTheServerLetsWrite(TestDatabase db) throws Exception {
    assertEquals(List.of("refused", "refused"), afterTakeover(db, FencingOptions.builder()));
  }

  /** Negative control: trusting the flag, SKIP lets a stale holder's write commit. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("flagNotEnforcedByTheDriver")
  void negativeControlTrustingTheFlagSkipLetsTheStaleWriteCommit(TestDatabase db) throws Exception {
    assertEquals(
        List.of("committed", "committed"),
        afterTakeover(
            db,
            WeakenedFence.weaken(FencingOptions.builder(), WeakenedFence.TRUST_READ_ONLY_FLAG)));
  }

  /** Per sequence: what became of a flagged, writable transaction's write after a takeover. */
  private static List<String> afterTakeover(TestDatabase db, FencingOptions.Builder options)
      throws Exception {
    List<String> outcomes = new ArrayList<>();
    try (Fixture f = new Fixture(db, 3)) {
      FencedDataSource ds =
          f.fenced(options.listener(f.counter).readOnly(ReadOnlyPolicy.SKIP).build());
      int id = 0;
      for (Sequence seq : Sequence.values()) {
        Lease lease =
            f.manager("holder-" + seq, LeaseTimings.DEFAULTS).tryClaim("skip-" + seq).orElseThrow();
        f.takeOver(lease); // the database gave it to a successor; the holder does not know yet
        int mine = ++id;
        try (Connection c = ds.getConnection()) {
          c.setReadOnly(true);
          try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
            begin(c, db, seq);
            try {
              f.insert(c, mine, lease.term());
              if (seq == Sequence.BEGIN_AS_SQL) {
                try (Statement s = c.createStatement()) {
                  s.execute("COMMIT");
                }
              } else {
                c.commit();
              }
            } catch (SQLException e) {
              // refused by the fence, or (Connector/J, with the flag trusted) by the driver
              end(c, seq);
            }
          }
          c.setAutoCommit(true);
          c.setReadOnly(false);
        }
        outcomes.add(f.count("id = " + mine) == 1 ? "committed" : "refused");
      }
    }
    return outcomes;
  }
}
