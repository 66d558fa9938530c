package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlStatement;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * Issue 9, path 1: SQL text holding more than one statement. Under a bound lease, text that mixes
 * transaction control with anything else is refused (LF005) on every execute path, before any of it
 * reaches the database; MySQL and MariaDB run with {@code allowMultiQueries=true}, the setting
 * under which such text runs there. The negative control reads texts by their first keyword, as the
 * first release did: the stale holder's UPDATE then commits, and the same count catches it.
 */
class SqlTextFencingTest {

  /** Every way a text reaches the driver. */
  enum Path {
    EXECUTE,
    EXECUTE_UPDATE,
    EXECUTE_LARGE_UPDATE,
    EXECUTE_QUERY,
    /** Each statement of the text as an entry of one batch. */
    BATCH,
    /** The whole text as one batch entry. */
    BATCH_TEXT,
    PREPARED,
    CALLABLE
  }

  /**
   * Runs {@code sql} on {@code c} through {@code path}; false when the driver refuses the text
   * itself before anything is sent (pgjdbc refuses several statements in one batch entry, MySQL
   * Connector/J and sqlite-jdbc a callable statement that is no procedure call).
   */
  static boolean run(TestDatabase db, Connection c, Path path, String sql) throws SQLException {
    switch (path) {
      case BATCH_TEXT:
        try (Statement s = c.createStatement()) {
          try {
            s.addBatch(sql);
          } catch (SQLException e) {
            return false;
          }
          s.executeBatch();
        }
        return true;
      case BATCH:
        try (Statement s = c.createStatement()) {
          for (SqlStatement st : SqlLexer.of(dialect(db)).statements(sql)) {
            s.addBatch(st.text(sql));
          }
          s.executeBatch();
        }
        return true;
      case CALLABLE:
        CallableStatement cs;
        try {
          cs = c.prepareCall(sql);
        } catch (SQLException e) {
          return false;
        }
        try (CallableStatement call = cs) {
          call.execute();
        }
        return true;
      default:
        run(c, path, sql);
        return true;
    }
  }

  static SqlDialect dialect(TestDatabase db) {
    return db == TestDatabase.POSTGRESQL
        ? SqlDialect.POSTGRESQL
        : db.isSqlite() ? SqlDialect.SQLITE : SqlDialect.MYSQL;
  }

  /** Runs {@code sql} on {@code c} through {@code path}. */
  static void run(Connection c, Path path, String sql) throws SQLException {
    switch (path) {
      case EXECUTE:
        try (Statement s = c.createStatement()) {
          s.execute(sql);
        }
        break;
      case EXECUTE_UPDATE:
        try (Statement s = c.createStatement()) {
          s.executeUpdate(sql);
        }
        break;
      case EXECUTE_LARGE_UPDATE:
        try (Statement s = c.createStatement()) {
          s.executeLargeUpdate(sql);
        }
        break;
      case EXECUTE_QUERY:
        try (Statement s = c.createStatement()) {
          s.executeQuery(sql).close();
        }
        break;
      case PREPARED:
        try (PreparedStatement ps = c.prepareStatement(sql)) {
          ps.execute();
        }
        break;
      default:
        throw new IllegalArgumentException(path.toString());
    }
  }

  /** Texts that commit an UPDATE of the counter however the transaction around them stands. */
  static List<String> attacks(TestDatabase db, String table) {
    String update = "UPDATE " + table + " SET n = n + 10 WHERE id = 1";
    String begin = db.isMySqlFamily() ? "START TRANSACTION" : "BEGIN";
    List<String> texts = new ArrayList<>();
    texts.add(begin + "; " + update + "; COMMIT");
    texts.add("COMMIT; " + update);
    texts.add(update + "; COMMIT");
    texts.add(" /* app */ commit ;\n" + update + " -- done");
    texts.add("ROLLBACK; " + update + "; COMMIT");
    if (db == TestDatabase.POSTGRESQL) {
      texts.add("SELECT '\\'; COMMIT; " + update + "; -- '"); // standard_conforming_strings on
      texts.add("END; " + update);
    }
    if (db.isMySqlFamily()) {
      texts.add("/*!COMMIT*/; " + update);
      texts.add("SET autocommit = 1; " + update);
      texts.add("CREATE TABLE IF NOT EXISTS " + table + "_x (a INT); " + update);
    }
    if (db.isSqlite()) {
      texts.add("END; " + update);
      texts.add("SAVEPOINT a; " + update + "; RELEASE a");
    }
    return texts;
  }

  private static final class Counter implements AutoCloseable {
    final Fixture f;
    final String table = TestDatabase.uniqueTable("acct");

    Counter(TestDatabase db) throws SQLException {
      f = new Fixture(db, 3, true);
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE TABLE " + table + " (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
        s.execute("INSERT INTO " + table + " (id, n) VALUES (1, 0)");
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
    }

    int value() throws SQLException {
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT n FROM " + table + " WHERE id = 1")) {
        rs.next();
        int n = rs.getInt(1);
        if (!c.getAutoCommit()) {
          c.rollback();
        }
        return n;
      }
    }

    @Override
    public void close() {
      TestDatabase.dropQuietly(f.pool, table, table + "_x");
      f.close();
    }
  }

  @OnEveryDatabase
  void textMixingTransactionControlIsRefusedOnEveryPathBeforeAnythingIsSent(TestDatabase db)
      throws Exception {
    try (Counter counter = new Counter(db)) {
      Fixture f = counter.f;
      Lease lease = f.holding("text");
      FencedDataSource ds = f.fenced(f.options().build());
      int refused = 0;
      for (boolean stale : new boolean[] {false, true}) {
        if (stale) {
          f.takeOver(lease);
        }
        for (boolean autoCommit : new boolean[] {true, false}) {
          for (Path path : Path.values()) {
            for (String sql : attacks(db, counter.table)) {
              try (LeaseContext.Scope scope = LeaseContext.bind(lease);
                  Connection c = ds.getConnection()) {
                c.setAutoCommit(autoCommit);
                try {
                  if (run(db, c, path, sql)) {
                    throw new AssertionError(path + " ran " + sql);
                  }
                } catch (SQLException e) {
                  assertEquals(
                      LeaseLostSQLException.TRANSACTION_CONTROL_MIXED,
                      e.getSQLState(),
                      path + " " + sql + ": " + e);
                  refused++;
                }
                if (!autoCommit && !c.isClosed()) {
                  c.rollback(); // (HikariCP evicts a connection after pgjdbc's 0A000)
                }
              }
              assertEquals(0, counter.value(), path + (stale ? " stale " : " healthy ") + sql);
            }
          }
        }
      }
      assertEquals(0, f.verified.get(), "refused before the verify: nothing reached the server");
      assertTrue(refused >= 2 * 2 * (Path.values().length - 2) * 5, "refusals: " + refused);
    }
  }

  /**
   * Negative control: the first release's reading (the leading keyword only) lets the stale
   * holder's UPDATE behind a COMMIT run and commit, and the same count catches it.
   */
  @OnEveryDatabase
  void negativeControlTheLeadingKeywordReadingLetsAStaleUpdateCommit(TestDatabase db)
      throws Exception {
    try (Counter counter = new Counter(db)) {
      Fixture f = counter.f;
      Lease lease = f.holding("text");
      f.takeOver(lease);
      FencedDataSource weak =
          f.fenced(WeakenedFence.weaken(f.options(), WeakenedFence.LEADING_KEYWORD).build());
      // sqlite-jdbc runs every statement of a text only in executeUpdate
      Path path = db.isSqlite() ? Path.EXECUTE_UPDATE : Path.EXECUTE;
      String begin = db.isMySqlFamily() ? "START TRANSACTION" : "BEGIN";
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = weak.getConnection()) {
        run(c, path, begin + "; UPDATE " + counter.table + " SET n = n + 10 WHERE id = 1; COMMIT");
      }
      assertEquals(10, counter.value(), "the stale UPDATE committed: the check must catch this");
    }
  }

  @OnEveryDatabase
  void aHealthyHoldersTextsOfOrdinaryStatementsRunAsOneVerifiedTransaction(TestDatabase db)
      throws Exception {
    try (Counter counter = new Counter(db)) {
      Fixture f = counter.f;
      Lease lease = f.holding("text");
      FencedDataSource ds = f.fenced(f.options().build());
      String update = "UPDATE " + counter.table + " SET n = n + 1 WHERE id = 1";
      Path path = db.isSqlite() ? Path.EXECUTE_UPDATE : Path.EXECUTE;
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        run(c, path, update + "; /* ; COMMIT */ " + update + ";");
        assertEquals(1, f.verified.get(), "one verified transaction for the whole text");
        assertEquals(2, counter.value());
        try (Statement s = c.createStatement()) {
          s.addBatch(update);
          s.addBatch(update);
          s.executeBatch();
        }
        assertEquals(2, f.verified.get());
        assertEquals(4, counter.value());
        // a lone transaction-control statement is no mix
        run(c, Path.EXECUTE, db.isMySqlFamily() ? "START TRANSACTION" : "BEGIN");
        run(c, Path.EXECUTE, update);
        run(c, Path.PREPARED, "COMMIT");
        assertEquals(5, counter.value());
      }
      f.takeOver(lease);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        SQLException e =
            assertThrows(SQLException.class, () -> run(c, path, update + "; " + update));
        assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState(), "the verify refuses it");
      }
      assertEquals(5, counter.value());
    }
  }

  @OnEveryDatabase
  void withNoLeaseBoundEveryTextPassesThroughUnread(TestDatabase db) throws Exception {
    try (Counter counter = new Counter(db)) {
      Fixture f = counter.f;
      FencedDataSource ds = f.fenced(f.options().build());
      Path path = db.isSqlite() ? Path.EXECUTE_UPDATE : Path.EXECUTE;
      String begin = db.isMySqlFamily() ? "START TRANSACTION" : "BEGIN";
      try (Connection c = ds.getConnection()) {
        run(c, path, begin + "; UPDATE " + counter.table + " SET n = n + 1 WHERE id = 1; COMMIT");
        try (PreparedStatement ps = c.prepareStatement("BEGIN; SELECT 1; COMMIT")) {
          // preparing control text is fine without a lease; it is read only when run under one
          ps.getMetaData();
        } catch (SQLException e) {
          // some drivers describe the statement at prepare; not the fence's business
        }
      }
      assertEquals(1, counter.value());
      assertEquals(0, f.verified.get());
    }
  }
}
