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
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Where the transaction is, when the application moves it with SQL rather than through JDBC: issue
 * 9, paths 2 (SET autocommit as SQL), 5 (close of a transaction begun with BEGIN) and 8 (VERIFY
 * mode's commit paths), and a transaction begun as SQL before the lease was bound. The fence must
 * never believe the session is in a transaction it is not in, nor turn a healthy holder's SQL
 * transaction into statements that commit one by one.
 */
class SessionStateTest {

  private static void sql(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static String begin(TestDatabase db) {
    return db.isMySqlFamily() ? "START TRANSACTION" : "BEGIN";
  }

  /** Rows of {@code id} as another session sees them (committed only). */
  private static int committed(Fixture f, int id) throws SQLException {
    return f.count("id = " + id);
  }

  // ---- a transaction begun as SQL before the lease was bound

  @OnEveryDatabase
  void aTransactionBegunAsSqlBeforeTheLeaseWasBoundStaysOneTransaction(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("sql-begin");
      FencedDataSource ds = f.fenced(f.options().build());
      try (Connection c = ds.getConnection()) {
        sql(c, begin(db)); // no lease bound yet: passes through, nothing read
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          f.insert(c, 1, lease.term());
          assertEquals(1, f.verified.get());
          if (!db.isSqlite()) { // SQLite's single writer would make the other session wait
            assertEquals(0, committed(f, 1), "inside the SQL transaction: not committed yet");
          }
          f.insert(c, 2, lease.term());
          assertEquals(1, f.verified.get(), "one transaction, one verify");
          sql(c, "ROLLBACK");
        }
      }
      assertEquals(0, committed(f, 1), "the rollback took both rows: they were one transaction");
      assertEquals(0, committed(f, 2));
    }
  }

  /**
   * Negative control: without asking the driver, the fence does not know of the BEGIN it did not
   * read, wraps the statement in a transaction of its own and commits the holder's work early
   * (SQLite: its BEGIN fails, and the statement with it).
   */
  @OnEveryDatabase
  void negativeControlWithoutTheDriversViewTheSqlTransactionIsCommittedEarly(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("sql-begin");
      FencedDataSource weak =
          f.fenced(WeakenedFence.weaken(f.options(), WeakenedFence.NO_DRIVER_SESSION).build());
      try (Connection c = weak.getConnection()) {
        sql(c, begin(db));
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          if (db.isSqlite()) {
            assertThrows(SQLException.class, () -> f.insert(c, 1, lease.term()));
            return;
          }
          f.insert(c, 1, lease.term());
          sql(c, "ROLLBACK");
        }
      }
      assertEquals(1, committed(f, 1), "committed by the fence's own transaction: caught");
    }
  }

  // ---- SET autocommit as SQL (MySQL, MariaDB)

  @OnMySqlFamily
  void setAutocommitAsSqlKeepsAHealthyHoldersTransactionWhole(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("set-ac");
      FencedDataSource ds = f.fenced(f.options().build());
      for (boolean before : new boolean[] {true, false}) {
        int id = before ? 10 : 20;
        try (Connection c = ds.getConnection()) {
          if (before) {
            sql(c, "SET autocommit = 0"); // before the lease: the fence reads nothing
          }
          try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
            if (!before) {
              sql(c, "SET autocommit = 0");
            }
            f.insert(c, id, lease.term());
            f.insert(c, id + 1, lease.term());
            assertEquals(0, committed(f, id), "not committed before the COMMIT");
            sql(c, "COMMIT");
            assertEquals(1, committed(f, id));
            assertEquals(1, committed(f, id + 1));
            f.insert(c, id + 2, lease.term());
            sql(c, "ROLLBACK");
            sql(c, "SET autocommit = 1");
          }
        }
        assertEquals(0, committed(f, id + 2), "rolled back as one transaction");
      }
    }
  }

  /**
   * Negative control (MySQL Connector/J, which keeps reporting the autocommit mode it set itself):
   * without the driver's view the fence believes autocommit, wraps each statement, and commits the
   * first before the holder's COMMIT.
   */
  @OnEveryDatabase
  void negativeControlConnectorJsStaleAutocommitCommitsStatementByStatement(TestDatabase db)
      throws Exception {
    if (db != TestDatabase.MYSQL) {
      return; // MariaDB Connector/J reads the server's flag itself; the others have no SET
    }
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("set-ac");
      FencedDataSource weak =
          f.fenced(WeakenedFence.weaken(f.options(), WeakenedFence.NO_DRIVER_SESSION).build());
      try (Connection c = weak.getConnection();
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        sql(c, "SET autocommit = 0");
        f.insert(c, 1, lease.term());
        assertEquals(1, committed(f, 1), "committed before the holder's COMMIT: caught");
        sql(c, "ROLLBACK");
      }
    }
  }

  @OnMySqlFamily
  void setAutocommitOneAsSqlIsACommitAndRunsItsChecks(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("set-ac1");
      FencedDataSource ds = f.fenced(f.options().mode(FencingMode.VERIFY).build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        lease.release();
        SQLException e = assertThrows(SQLException.class, () -> sql(c, "SET autocommit = 1"));
        assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
        c.rollback();
      }
      assertEquals(0, committed(f, 1));
    }
  }

  // ---- VERIFY mode: every commit path checks for a release (issue 9, path 8)

  /** The ways a transaction commits besides commit(), per database. */
  private static List<String> commitPaths(TestDatabase db) {
    List<String> paths = new ArrayList<>(List.of("setAutoCommit(true)", "COMMIT"));
    if (!db.isMySqlFamily()) {
      paths.add("END");
    } else {
      paths.add("CREATE TABLE IF NOT EXISTS " + TestDatabase.uniqueTable("ic") + " (a INT)");
      paths.add("SET autocommit = 1");
      paths.add(begin(db));
    }
    return paths;
  }

  private static void commitBy(Connection c, String path) throws SQLException {
    if (path.equals("setAutoCommit(true)")) {
      c.setAutoCommit(true);
    } else {
      sql(c, path);
    }
  }

  @OnEveryDatabase
  void verifyModeRefusesEveryCommitPathAfterARelease(TestDatabase db) throws Exception {
    assertEquals(List.of(), staleCommits(db, false));
  }

  /**
   * Negative control: without the checks the same paths commit after the release. (MySQL's implicit
   * commit of DDL is not among them: the fresh verify before such a statement refuses it too.)
   */
  @OnEveryDatabase
  void negativeControlCommitPathsWithoutChecksCommitAfterARelease(TestDatabase db)
      throws Exception {
    List<String> expected = new ArrayList<>(commitPaths(db));
    expected.removeIf(p -> p.startsWith("CREATE TABLE"));
    assertEquals(expected, staleCommits(db, true));
  }

  /** The commit paths whose row committed after the lease was released. */
  private static List<String> staleCommits(TestDatabase db, boolean weakened) throws Exception {
    List<String> stale = new ArrayList<>();
    try (Fixture f = new Fixture(db, 3)) {
      LeaseManager m = f.manager("holder", LeaseTimings.DEFAULTS);
      FencingOptions.Builder b = f.options().mode(FencingMode.VERIFY);
      FencedDataSource ds =
          f.fenced(
              (weakened
                      ? WeakenedFence.weaken(
                          b, WeakenedFence.PREVIOUS_REFUSAL, WeakenedFence.NO_COMMIT_CHECKS)
                      : b)
                  .build());
      int id = 0;
      for (String path : commitPaths(db)) {
        id++;
        Lease lease = m.tryClaim("verify-" + id).orElseThrow();
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          if (db.isSqlite()) {
            assertEquals(0, f.count(c, "id = " + id)); // a read: a write would block the release
          } else {
            f.insert(c, id, lease.term());
          }
          lease.release();
          try {
            commitBy(c, path);
          } catch (LeaseLostSQLException e) {
            assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState(), path);
            c.rollback();
            continue;
          }
          if (db.isSqlite()) {
            stale.add(path); // the read's transaction committed after the release
          }
        } catch (SQLException e) {
          // sqlite-jdbc: after COMMIT as SQL its own transaction is gone, and the pool's rollback
          // at close fails; the commit is what the test looks at
          if (!db.isSqlite()) {
            throw e;
          }
        }
        if (!db.isSqlite() && committed(f, id) == 1) {
          stale.add(path);
        }
      }
    }
    return stale;
  }

  // ---- close() of a transaction begun as SQL (issue 9, path 5)

  @OnEveryDatabase
  void closeRollsBackAVerifiedTransactionBegunAsSql(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("close");
      assertEquals(0, staleAfterNextBorrower(f, lease, f.options().build(), 1));
      assertEquals(
          1,
          staleAfterNextBorrower(
              f,
              lease,
              WeakenedFence.weaken(f.options(), WeakenedFence.NO_ROLLBACK_AT_CLOSE).build(),
              2),
          "negative control: left open, the next borrower's COMMIT commits the stale row");
    }
  }

  private static int staleAfterNextBorrower(Fixture f, Lease lease, FencingOptions o, int id)
      throws Exception {
    try (NoRollbackOnReturn pool = new NoRollbackOnReturn(f.pool)) {
      DataSource ds = FencedDataSource.wrap(pool, o);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        assertTrue(c.getAutoCommit());
        sql(c, begin(f.db));
        f.insert(c, id, lease.term());
        // closed without COMMIT or ROLLBACK, autocommit still reported true
      }
      try (Connection next = ds.getConnection()) {
        assertTrue(next.getAutoCommit());
        f.count(next, "1 = 1");
        try {
          sql(next, "COMMIT");
        } catch (SQLException e) {
          assertFalse(f.db == TestDatabase.POSTGRESQL, e.toString()); // SQLite: none active
        }
      }
    }
    return f.count("id = " + id);
  }
}
