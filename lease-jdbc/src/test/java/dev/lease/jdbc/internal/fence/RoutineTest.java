package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.OutsideTransactionPolicy;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * MySQL/MariaDB stored procedures may commit inside: the fence cannot see their statements. A CALL
 * under a lease is preceded by a fresh verify (a stale lease never reaches the procedure) and
 * followed by another before anything else runs or commits (what the procedure left open is
 * verified again). PostgreSQL refuses a procedure's COMMIT inside the fence's transaction.
 */
class RoutineTest {

  @OnMySqlFamily
  void aCallIsVerifiedBeforeAndAfterAndAStaleLeaseNeverReachesTheProcedure(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      String proc = committingProcedure(f, true);
      Lease lease = f.holding("call");
      FencedDataSource ds =
          f.fenced(f.options().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST).build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        call(c, proc, 100);
        assertEquals(2, f.verified.get(), "a fresh verify right before the call");
        c.commit();
        assertEquals(3, f.verified.get(), "verified again before the commit after it");
      }
      assertEquals(3, f.count("id IN (1, 100, 101)"));
      f.takeOver(lease);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        SQLException e =
            assertThrows(SQLException.class, () -> s.execute("CALL " + proc + "(200)"));
        assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
      }
      assertEquals(0, f.count("id IN (200, 201)"), "the procedure never ran");
    }
  }

  /**
   * {@link Doubt#ROUTINE}: a procedure that commits inside frees STRICT's lock; a successor takes
   * over; the holder's next write must verify again and be refused.
   */
  @OnMySqlFamily
  void afterARoutineThatCommittedTheStaleWriteIsRefused(TestDatabase db) throws Exception {
    assertEquals("refused", afterACommittingRoutine(db, false));
  }

  /** Control: ignoring the routine's doubt, the stale write after the takeover commits. */
  @OnMySqlFamily
  void controlIgnoringTheRoutinesDoubtTheStaleWriteCommits(TestDatabase db) throws Exception {
    assertEquals("committed", afterACommittingRoutine(db, true));
  }

  private static String afterACommittingRoutine(TestDatabase db, boolean ignoreDoubt)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      String proc = committingProcedure(f, false);
      Lease lease = f.holding("doubt");
      dev.lease.jdbc.FencingOptions.Builder b =
          f.options().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST);
      FencedDataSource ds =
          f.fenced((ignoreDoubt ? WeakenedFence.weaken(b, WeakenedFence.NO_REVERIFY) : b).build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        call(c, proc, 100); // its COMMIT ends the verified transaction and frees the share lock
        f.takeOver(lease); // does not wait: the lock is gone
        try {
          f.insert(c, 2, lease.term());
          c.commit();
        } catch (LeaseLostSQLException e) {
          assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState(), e.toString());
          c.rollback();
          return f.count("id = 2") == 0 ? "refused" : "refused, yet written";
        }
      }
      return f.count("id = 2") == 1 ? "committed" : "lost";
    }
  }

  /** PostgreSQL: a procedure's COMMIT is refused inside the fence's own transaction. */
  @OnEveryDatabase
  void postgresqlRefusesAProceduresCommitInsideTheFencesTransaction(TestDatabase db)
      throws Exception {
    if (db != TestDatabase.POSTGRESQL) {
      return;
    }
    try (Fixture f = new Fixture(db, 3)) {
      String proc =
          procedure(
              f,
              "() LANGUAGE plpgsql AS $$ BEGIN INSERT INTO "
                  + f.data
                  + " (id, term) VALUES (1, 0); COMMIT; INSERT INTO "
                  + f.data
                  + " (id, term) VALUES (2, 0); END $$");
      Lease lease = f.holding("call");
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c =
              f.fenced(
                      f.options().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST).build())
                  .getConnection();
          Statement s = c.createStatement()) {
        SQLException e = assertThrows(SQLException.class, () -> s.execute("CALL " + proc + "()"));
        assertEquals("2D000", e.getSQLState(), e.toString()); // invalid transaction termination
      }
      assertEquals(0, f.count("id IN (1, 2)"));
    }
  }

  /** Creates the procedure {@code <name><definition>}, dropped when {@code f} closes: its name. */
  private static String procedure(Fixture f, String definition) throws SQLException {
    String proc = TestDatabase.uniqueTable("p");
    f.execute("CREATE PROCEDURE " + proc + definition);
    f.closeLater(() -> f.execute("DROP PROCEDURE IF EXISTS " + proc));
    return proc;
  }

  /**
   * MySQL/MariaDB: a procedure that inserts row {@code base}, commits, and ({@code andNext})
   * inserts row {@code base + 1}.
   */
  private static String committingProcedure(Fixture f, boolean andNext) throws SQLException {
    String insert = "INSERT INTO " + f.data + " (id, term) VALUES ";
    return procedure(
        f,
        "(IN base INT) BEGIN "
            + insert
            + "(base, 0); COMMIT; "
            + (andNext ? insert + "(base + 1, 0); " : "")
            + "END");
  }

  /** {@code {call proc(base)}} through a {@link CallableStatement} of {@code c}. */
  private static void call(Connection c, String proc, int base) throws SQLException {
    try (CallableStatement cs = c.prepareCall("{call " + proc + "(?)}")) {
      cs.setInt(1, base);
      cs.execute();
    }
  }
}
