package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 35 items 1 and 6: the verify reaches the one real lease table by a reference the session
 * cannot redefine ({@code Dialect.resolve}: PostgreSQL {@code "schema"."table"} and its operators
 * in {@code pg_catalog}, MySQL/MariaDB {@code `db`.`table` PARTITION (p0)}, SQLite {@code
 * main.table}). A session that shadows the lease table with a temporary copy (made without a lease,
 * kept by a pooled physical connection) cannot make a stale holder's transaction commit; a session
 * that switches its schema or database still commits a healthy one. Each stale-commit test has its
 * control: the verify naming the table as configured ({@link WeakenedFence#UNQUALIFIED_TABLE}),
 * which reads the shadow and commits the stale write.
 */
class SessionRedefinitionTest {

  private static final AtomicInteger IDS = new AtomicInteger();

  /**
   * A holder under a lease whose copy of the lease table in the session still names it (as a
   * careless or hostile session would keep it), then the database gives the name to a successor,
   * then the holder inserts and commits. Returns the rows of the holder's insert that committed.
   */
  private static int staleCommitThroughATemporaryCopy(TestDatabase db, boolean weakened)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("t" + IDS.incrementAndGet());
      FencingOptions.Builder b = f.options();
      if (weakened) {
        WeakenedFence.weaken(b, WeakenedFence.UNQUALIFIED_TABLE);
      }
      FencedDataSource ds = f.fenced(b.build());
      try (Connection c = ds.getConnection()) {
        try (Statement s = c.createStatement()) {
          // no lease bound: the wrapper passes these through, as a pool's earlier borrower would
          for (String sql : temporaryCopy(db, f.leaseTable)) {
            s.execute(sql);
          }
        }
        staleWriteAfterTakeover(f, c, lease);
      }
      return f.count("id = 1");
    }
  }

  /** A temporary table named like the lease table, its rows the real ones, expiring an hour on. */
  private static String[] temporaryCopy(TestDatabase db, String table) {
    switch (db) {
      case POSTGRESQL:
        return new String[] {
          "CREATE TEMP TABLE " + table + " AS SELECT * FROM public." + table,
          "UPDATE pg_temp." + table + " SET expires_at_ms = expires_at_ms + 3600000"
        };
      case SQLITE:
        return new String[] {
          "CREATE TEMP TABLE " + table + " AS SELECT * FROM main." + table,
          "UPDATE temp." + table + " SET expires_at_ms = expires_at_ms + 3600000"
        };
      default:
        return new String[] {
          "CREATE TEMPORARY TABLE " + table + " AS SELECT * FROM " + table,
          "UPDATE " + table + " SET expires_at_ms = expires_at_ms + 3600000"
        };
    }
  }

  @OnEveryDatabase
  void aTemporaryTableNamedLikeTheLeaseTableCannotStandInForIt(TestDatabase db) throws Exception {
    assertEquals(0, staleCommitThroughATemporaryCopy(db, false), db + ": the stale write");
  }

  @OnEveryDatabase
  void negativeControlAVerifyNamingTheTableAsConfiguredReadsTheCopyAndCommits(TestDatabase db)
      throws Exception {
    assertEquals(1, staleCommitThroughATemporaryCopy(db, true), db + ": the control commits");
  }

  /**
   * On MySQL/MariaDB the shadowed reference fails in the server (a temporary table cannot be
   * partitioned): the error says what stands in the way, and the transaction is refused.
   */
  @OnMySqlFamily
  void aShadowedLeaseTableFailsTheVerifyWithAMessageThatSaysWhy(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("m" + IDS.incrementAndGet());
      try (Connection c = f.fenced(f.options().build()).getConnection()) {
        try (Statement s = c.createStatement()) {
          s.execute(temporaryCopy(db, f.leaseTable)[0]);
        }
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          c.setAutoCommit(false);
          SQLException e = assertThrows(SQLException.class, () -> f.insert(c, 1, lease.term()));
          assertTrue(
              e.getMessage().contains("temporary table"), "names the cause: " + e.getMessage());
          c.rollback();
        }
      }
      assertEquals(0, f.count(null));
    }
  }

  /**
   * Item 6: the application switches its schema ({@code setSchema}, {@code SET search_path}) or
   * database ({@code setCatalog}, {@code USE}) and writes there under its lease: the verify still
   * reaches the lease table, and the transaction commits.
   */
  @OnEveryServer
  void aSessionThatSwitchesSchemaOrDatabaseStillCommitsUnderItsLease(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("s" + IDS.incrementAndGet());
      String other = TestDatabase.uniqueTable("lease_other");
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute((db.isMySqlFamily() ? "CREATE DATABASE " : "CREATE SCHEMA ") + other);
        s.execute("CREATE TABLE " + other + ".invoice (id INTEGER PRIMARY KEY)");
      }
      try {
        FencedDataSource ds = f.fenced(f.options().build());
        // MySQL Connector/J under HikariCP does not switch with setCatalog here (seen: getCatalog()
        // answers the new database, DATABASE() the old one; the same outside the fence), so its
        // session switches with USE only
        String[] hows =
            db == TestDatabase.MYSQL ? new String[] {"sql"} : new String[] {"api", "sql"};
        for (String how : hows) {
          try (LeaseContext.Scope scope = LeaseContext.bind(lease);
              Connection c = ds.getConnection();
              Statement s = c.createStatement()) {
            if (how.equals("sql")) {
              s.execute(db.isMySqlFamily() ? "USE " + other : "SET search_path = " + other);
            } else if (db.isMySqlFamily()) {
              c.setCatalog(other);
            } else {
              c.setSchema(other);
            }
            c.setAutoCommit(false);
            s.executeUpdate("INSERT INTO invoice VALUES (" + (how.equals("api") ? 1 : 2) + ")");
            c.commit();
          }
        }
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement();
            java.sql.ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + other + ".invoice")) {
          rs.next();
          assertEquals(hows.length, rs.getInt(1), db + ": each committed");
        }
        assertTrue(f.verified.get() >= hows.length, db + ": verified");
      } finally {
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement()) {
          s.execute(
              db.isMySqlFamily()
                  ? "DROP DATABASE IF EXISTS " + other
                  : "DROP SCHEMA IF EXISTS " + other + " CASCADE");
        }
      }
    }
  }

  /**
   * PostgreSQL resolves operators and functions through the {@code search_path} too ({@code
   * pg_temp} never for them, but any schema listed before {@code pg_catalog}): an {@code =} on text
   * that is always true in such a schema would let a stale holder's verify match the successor's
   * row. The verify names its operators in {@code pg_catalog}. Control: the same verify with plain
   * operators commits the stale write.
   */
  @Test
  void postgresqlAnOperatorOfTheSessionsSchemaCannotStandInForTheVerifysOwn() throws Exception {
    assertEquals(0, staleCommitThroughAnOperator(false), "postgresql: the stale write");
    assertEquals(1, staleCommitThroughAnOperator(true), "postgresql: the control commits");
  }

  private static int staleCommitThroughAnOperator(boolean weakened) throws Exception {
    TestDatabase db = TestDatabase.POSTGRESQL;
    try (Fixture f = new Fixture(db, 2)) {
      String schema = TestDatabase.uniqueTable("lease_ops");
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE SCHEMA " + schema);
        s.execute(
            "CREATE FUNCTION "
                + schema
                + ".always(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'");
        s.execute(
            "CREATE OPERATOR "
                + schema
                + ".= (LEFTARG = text, RIGHTARG = text, FUNCTION = "
                + schema
                + ".always)");
        s.execute(
            "CREATE FUNCTION "
                + schema
                + ".always(bigint, bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'");
        s.execute(
            "CREATE OPERATOR "
                + schema
                + ".= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = "
                + schema
                + ".always)");
      }
      try {
        Lease lease = f.holding("o" + IDS.incrementAndGet());
        FencingOptions.Builder b = f.options();
        if (weakened) {
          WeakenedFence.weaken(b, WeakenedFence.UNQUALIFIED_TABLE);
        }
        try (Connection c = f.fenced(b.build()).getConnection()) {
          try (Statement s = c.createStatement()) {
            s.execute("SET search_path = " + schema + ", public, pg_catalog");
          }
          staleWriteAfterTakeover(f, c, lease);
        }
        return f.count("id = 1");
      } finally {
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement()) {
          s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
      }
    }
  }

  /** The reference the statements use names the table beyond the session's reach. */
  @OnEveryDatabase
  void theLeaseTableIsReachedByAQualifiedReference(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      String reference =
          LeaseInternals.dialect(f.manager("holder", LeaseTimings.DEFAULTS)).reference();
      String expected =
          switch (db) {
            case POSTGRESQL -> "\"public\".\"" + f.leaseTable + "\"";
            case SQLITE -> "main." + f.leaseTable;
            default -> "`test`.`" + f.leaseTable + "` PARTITION (p0)";
          };
      assertEquals(expected, reference, db.toString());
    }
  }

  /**
   * The successor's claim commits (the holder does not know yet); then the holder writes row 1 on
   * {@code c} under {@code lease} and commits, or rolls back when refused.
   */
  private static void staleWriteAfterTakeover(Fixture f, Connection c, Lease lease)
      throws SQLException {
    f.takeOver(lease);
    try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
      c.setAutoCommit(false);
      try {
        f.insert(c, 1, lease.term());
        c.commit();
      } catch (SQLException refused) {
        c.rollback();
      }
    }
  }
}
