package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 9, path 10: statements a database will not run inside a transaction (PostgreSQL VACUUM and
 * CREATE INDEX CONCURRENTLY, SQLite VACUUM) and MySQL's statements that commit around themselves
 * (DDL). Under a lease in autocommit mode they run as in autocommit mode, after a verify of their
 * own immediately before (a transaction cannot hold both); a stale lease refuses them before they
 * run. The control: the same statement in a verified transaction gets the database's refusal, the
 * confusing error the fence's own transaction used to produce.
 */
class OutsideTransactionTest {

  /** Statements, per database, that cannot run inside a transaction block (or commit around). */
  private static List<String> statements(Fixture f, String index) {
    switch (f.db) {
      case POSTGRESQL:
        return List.of(
            "VACUUM " + f.data, "CREATE INDEX CONCURRENTLY " + index + " ON " + f.data + " (term)");
      case SQLITE:
        return List.of("VACUUM", "PRAGMA optimize");
      default:
        return List.of("CREATE INDEX " + index + " ON " + f.data + " (term)");
    }
  }

  private static boolean indexExists(Fixture f, String index) throws SQLException {
    try (Connection c = f.pool.getConnection()) {
      DatabaseMetaData md = c.getMetaData();
      try (ResultSet rs = md.getIndexInfo(null, null, f.data, false, false)) {
        while (rs.next()) {
          if (index.equalsIgnoreCase(rs.getString("INDEX_NAME"))) {
            return true;
          }
        }
      }
      return false;
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void underALeaseTheyRunAfterAVerifyOfTheirOwnAndAStaleLeaseRefusesThem(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.manager("holder", LeaseTimings.DEFAULTS).tryClaim("outside").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      String index = TestDatabase.uniqueTable("ix");
      List<String> sqls = statements(f, index);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        for (String sql : sqls) {
          s.execute(sql); // no "cannot run inside a transaction block"
        }
        assertEquals(sqls.size(), f.verified.get(), "each after a verify of its own");
        assertTrue(c.getAutoCommit());
      }
      if (!db.isSqlite()) {
        assertTrue(indexExists(f, index));
      }
      f.takeOver(lease);
      String stale = TestDatabase.uniqueTable("ix");
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        for (String sql : statements(f, stale)) {
          SQLException e = assertThrows(SQLException.class, () -> s.execute(sql), sql);
          assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState(), sql);
        }
      }
      if (!db.isSqlite()) {
        assertTrue(!indexExists(f, stale), "refused before it ran");
      }
    }
  }

  /**
   * Control: inside a transaction PostgreSQL and SQLite refuse these statements themselves, with
   * the error the fence's own autocommit transaction used to provoke.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void controlInsideATransactionTheDatabaseRefusesThem(TestDatabase db) throws Exception {
    if (db.isMySqlFamily()) {
      return; // MySQL commits around them instead: see the next test
    }
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.manager("holder", LeaseTimings.DEFAULTS).tryClaim("inside").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        SQLException e = assertThrows(SQLException.class, () -> s.execute("VACUUM"));
        assertTrue(
            String.valueOf(e.getMessage()).toLowerCase().contains("transaction"), e.toString());
        c.rollback();
      }
    }
  }

  /**
   * MySQL/MariaDB commit the open transaction before DDL: inside a verified transaction the DDL is
   * preceded by a fresh verify (the commit happens with the lock held), and the next statement is a
   * new transaction that verifies again.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.testing.TestDatabase#all")
  void mysqlDdlInsideATransactionCommitsItUnderAFreshVerify(TestDatabase db) throws Exception {
    if (!db.isMySqlFamily()) {
      return;
    }
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.manager("holder", LeaseTimings.DEFAULTS).tryClaim("ddl").orElseThrow();
      FencedDataSource ds = f.fenced(f.options().build());
      String table = TestDatabase.uniqueTable("ddl");
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        assertEquals(1, f.verified.get());
        s.execute("CREATE TABLE " + table + " (a INT)");
        assertEquals(2, f.verified.get(), "a fresh verify right before the implicit commit");
        assertEquals(1, f.count("id = 1"), "MySQL committed the transaction with the DDL");
        f.insert(c, 2, lease.term());
        assertEquals(3, f.verified.get(), "the next statement is a new transaction");
        c.rollback();
      } finally {
        TestDatabase.dropQuietly(f.pool, table);
      }
      assertEquals(0, f.count("id = 2"));
    }
  }
}
