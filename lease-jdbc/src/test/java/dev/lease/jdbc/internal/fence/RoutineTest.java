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
      String proc = TestDatabase.uniqueTable("p");
      f.execute(
          "CREATE PROCEDURE "
              + proc
              + "(IN base INT) BEGIN INSERT INTO "
              + f.data
              + " (id, term) VALUES (base, 0); COMMIT; INSERT INTO "
              + f.data
              + " (id, term) VALUES (base + 1, 0); END");
      try {
        Lease lease = f.holding("call");
        FencedDataSource ds =
            f.fenced(f.options().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST).build());
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          f.insert(c, 1, lease.term());
          try (CallableStatement cs = c.prepareCall("{call " + proc + "(?)}")) {
            cs.setInt(1, 100);
            cs.execute();
          }
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
      } finally {
        f.execute("DROP PROCEDURE IF EXISTS " + proc);
      }
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
      String proc = TestDatabase.uniqueTable("p");
      f.execute(
          "CREATE PROCEDURE "
              + proc
              + "(IN base INT) BEGIN INSERT INTO "
              + f.data
              + " (id, term) VALUES (base, 0); COMMIT; END");
      try {
        Lease lease = f.holding("doubt");
        dev.lease.jdbc.FencingOptions.Builder b =
            f.options().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST);
        FencedDataSource ds =
            f.fenced(
                (ignoreDoubt ? WeakenedFence.weaken(b, WeakenedFence.NO_REVERIFY) : b).build());
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          f.insert(c, 1, lease.term());
          try (CallableStatement cs = c.prepareCall("{call " + proc + "(?)}")) {
            cs.setInt(1, 100);
            cs.execute(); // its COMMIT ends the verified transaction and frees the share lock
          }
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
      } finally {
        f.execute("DROP PROCEDURE IF EXISTS " + proc);
      }
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
      String proc = TestDatabase.uniqueTable("p");
      f.execute(
          "CREATE PROCEDURE "
              + proc
              + "() LANGUAGE plpgsql AS $$ BEGIN INSERT INTO "
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
}
