package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.OutsideTransactionPolicy;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Issue 35 item 2: statements whose effect would land outside the verified transaction's lock
 * (PostgreSQL VACUUM and CREATE INDEX CONCURRENTLY, SQLite VACUUM, MySQL/MariaDB DDL that commits
 * around itself and CALL, INSERT DELAYED). Under STRICT they are refused before they are sent
 * ({@code LF006}), since nothing orders their effect before a successor's claim; {@link
 * OutsideTransactionPolicy#VERIFY_FIRST} runs them after a verify of their own as before (and is
 * the control: a slow DDL's table lands after the successor's claim committed).
 */
class OutsideTransactionTest {

  /** Statements, per database, that cannot run inside a transaction block (or commit around). */
  private static List<String> statements(Fixture f, String index) {
    switch (f.db) {
      case POSTGRESQL:
        return List.of(
            "CREATE INDEX CONCURRENTLY " + index + " ON " + f.data + " (term)", "VACUUM " + f.data);
      case SQLITE:
        return List.of("VACUUM");
      default:
        return List.of(
            "CREATE INDEX " + index + " ON " + f.data + " (term)",
            "TRUNCATE TABLE " + f.data,
            "CALL no_such_procedure()");
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

  @OnEveryDatabase
  void underStrictTheyAreRefusedBeforeTheyAreSent(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("refused");
      FencedDataSource ds = f.fenced(f.options().build());
      String index = TestDatabase.uniqueTable("ix");
      for (boolean autoCommit : new boolean[] {true, false}) {
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection();
            Statement s = c.createStatement()) {
          c.setAutoCommit(autoCommit);
          for (String sql : statements(f, index)) {
            SQLException e = assertThrows(SQLException.class, () -> s.execute(sql), sql);
            assertEquals(LeaseLostSQLException.OUTSIDE_TRANSACTION, e.getSQLState(), sql);
            assertTrue(e.getMessage().contains("without a lease bound"), e.getMessage());
          }
          if (!autoCommit) {
            c.rollback();
          }
        }
      }
      assertEquals(0, f.verified.get(), db + ": nothing was sent, not even a verify");
      if (!db.isSqlite()) {
        assertFalse(indexExists(f, index), db + ": refused before it ran");
      }
      // without a lease bound they are not fenced: they run (migrations, maintenance)
      try (Connection c = ds.getConnection();
          Statement s = c.createStatement()) {
        s.execute(statements(f, index).get(0));
      }
      if (!db.isSqlite()) {
        assertTrue(indexExists(f, index), db + ": runs without a lease");
      }
    }
  }

  /**
   * {@link OutsideTransactionPolicy#VERIFY_FIRST}: they run as in autocommit mode after a verify of
   * their own immediately before (a transaction cannot hold both), and a stale lease refuses them
   * before they run.
   */
  @OnEveryDatabase
  void withVerifyFirstTheyRunAfterAVerifyOfTheirOwnAndAStaleLeaseRefusesThem(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("outside");
      FencedDataSource ds =
          f.fenced(f.options().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST).build());
      String index = TestDatabase.uniqueTable("ix");
      List<String> sqls = statements(f, index).subList(0, 1);
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
        String sql = statements(f, stale).get(0);
        SQLException e = assertThrows(SQLException.class, () -> s.execute(sql), sql);
        assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState(), sql);
      }
      if (!db.isSqlite()) {
        assertFalse(indexExists(f, stale), "refused before it ran");
      }
    }
  }

  /**
   * The attack of issue 35 item 2 on MySQL/MariaDB: {@code CREATE TABLE ... AS SELECT SLEEP(..)}
   * under a lease that expires while it runs. The successor's claim commits while the statement
   * runs (nothing holds the lease row: the implicit commit before the DDL ended the verify's
   * transaction), and the stale holder's table lands after it. Under STRICT the statement is
   * refused; {@link OutsideTransactionPolicy#VERIFY_FIRST} is the control that lets it land.
   */
  @OnMySqlFamily
  void aSlowDdlCannotLandAfterTheSuccessorsClaim(TestDatabase db) throws Exception {
    assertFalse(slowDdlLandsAfterTheClaim(db, OutsideTransactionPolicy.REFUSE), db + ": STRICT");
    assertTrue(
        slowDdlLandsAfterTheClaim(db, OutsideTransactionPolicy.VERIFY_FIRST),
        db + ": the control's table lands after the successor's claim");
  }

  private static final LeaseTimings SHORT = LeaseTimings.of(Duration.ofMillis(600));

  /**
   * Whether the stale holder's table exists and was still being created when the claim committed.
   */
  private static boolean slowDdlLandsAfterTheClaim(TestDatabase db, OutsideTransactionPolicy p)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      LeaseManager holder = f.manager("holder", SHORT);
      LeaseManager successor =
          f.closeLater(
              LeaseManager.builder(f.pool)
                  .table(f.leaseTable)
                  .instance("successor")
                  .timings(SHORT)
                  .failurePolicy(FailurePolicy.logOnly())
                  .build());
      Lease lease = holder.tryClaim("slow").orElseThrow(); // never renewed: expires in 600 ms
      FencingOptions options = f.options().outsideTransaction(p).build();
      String table = TestDatabase.uniqueTable("stale");
      CompletableFuture<Long> claimedAt =
          CompletableFuture.supplyAsync(
              () -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < deadline) {
                  Optional<Lease> won = successor.tryClaim("slow");
                  if (won.isPresent()) {
                    return System.nanoTime();
                  }
                  java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
                }
                return Long.MAX_VALUE;
              });
      long returned;
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(options).getConnection();
          Statement s = c.createStatement()) {
        try {
          s.execute("CREATE TABLE " + table + " AS SELECT SLEEP(1.5) AS slept");
        } catch (SQLException refused) {
          assertEquals(LeaseLostSQLException.OUTSIDE_TRANSACTION, refused.getSQLState());
        }
        returned = System.nanoTime();
      }
      long claimed = claimedAt.get(20, TimeUnit.SECONDS);
      boolean exists;
      try (Connection c = f.pool.getConnection();
          ResultSet rs = c.getMetaData().getTables(null, null, table, null)) {
        exists = rs.next();
      } finally {
        TestDatabase.dropQuietly(f.pool, table);
      }
      return exists && claimed < returned;
    }
  }

  /**
   * MySQL/MariaDB {@code INSERT DELAYED} returns before the server writes its row (MyISAM): it is
   * refused under a lease whatever the policy; without a lease it runs.
   */
  @OnMySqlFamily
  void insertDelayedIsRefusedUnderALease(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("delayed");
      for (OutsideTransactionPolicy p : OutsideTransactionPolicy.values()) {
        FencedDataSource ds = f.fenced(f.options().outsideTransaction(p).build());
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection();
            Statement s = c.createStatement()) {
          SQLException e =
              assertThrows(
                  SQLException.class,
                  () -> s.execute("INSERT DELAYED INTO " + f.data + " (id, term) VALUES (1, 1)"));
          assertEquals(LeaseLostSQLException.OUTSIDE_TRANSACTION, e.getSQLState(), p.name());
        }
      }
      assertEquals(0, f.count(null));
    }
  }

  /**
   * Control: inside a transaction PostgreSQL and SQLite refuse these statements themselves, with
   * the error the fence's own autocommit transaction used to provoke.
   */
  @OnEveryDatabase
  void controlInsideATransactionTheDatabaseRefusesThem(TestDatabase db) throws Exception {
    if (db.isMySqlFamily()) {
      return; // MySQL commits around them instead: see the next test
    }
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("inside");
      FencedDataSource ds =
          f.fenced(f.options().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST).build());
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
   * With {@link OutsideTransactionPolicy#VERIFY_FIRST}, MySQL/MariaDB commit the open transaction
   * before DDL: inside a verified transaction the DDL is preceded by a fresh verify (the commit
   * happens with the lock held), and the next statement is a new transaction that verifies again.
   */
  @OnMySqlFamily
  void mysqlDdlInsideATransactionCommitsItUnderAFreshVerify(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("ddl");
      FencedDataSource ds =
          f.fenced(f.options().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST).build());
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

  /**
   * Statements whose effect stays in the session run under a lease as they are, with no verify:
   * PostgreSQL DISCARD, SQLite ATTACH/DETACH and configuration PRAGMAs.
   */
  @OnEveryDatabase
  void sessionStatementsRunUnderALease(TestDatabase db) throws Exception {
    if (db.isMySqlFamily()) {
      return; // LOCK and UNLOCK TABLES: LockTablesTest, UnlockTablesTest
    }
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("session");
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement()) {
        if (db.isSqlite()) {
          s.execute("PRAGMA foreign_keys = ON");
          s.execute("PRAGMA optimize");
          s.execute("ATTACH DATABASE ':memory:' AS scratch");
          s.execute("DETACH DATABASE scratch");
        } else {
          s.execute("DISCARD TEMP");
        }
      }
      assertEquals(0, f.verified.get(), db + ": nothing to verify");
    }
  }
}
