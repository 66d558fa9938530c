package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The agent's own pool of lease connections ({@link LeaseConnectionPool} behind {@link
 * LeaseDatabase}), with lease-core's real statements on each database:
 *
 * <ul>
 *   <li>a leader's renewals and a replica's polls reuse one physical connection each, where the
 *       agent used to open one per statement (negative control: a pool that keeps none opens one
 *       per statement, and the same count sees it);
 *   <li>a kept connection's session is what a fresh connection's is after claims, renewals,
 *       releases, a failed statement and a use that left a transaction open with auto-commit off
 *       (negative control: without the pool's session check that use's session is handed on, and
 *       the same comparison sees it);
 *   <li>a connection the server ended while it was idle is replaced before a lease statement uses
 *       it (negative control: without the validation the statement fails; the next one reopens).
 * </ul>
 */
class LeaseConnectionPoolTest {

  private static final int STATEMENTS = 10;

  /** The agent's configuration for {@code url} (leader mode: the mode does not matter here). */
  private static AgentConfig config(String url) {
    return AgentConfig.parse("mode=leader,lease=pool,url=" + url, key -> null);
  }

  private static String url(TestDatabase db) {
    return db.isSqlite() ? db.url() + "?journal_mode=WAL&busy_timeout=10000" : db.url();
  }

  private static LeaseDatabase database(
      String url, int keepIdle, Duration validateAfterIdle, boolean checkSessions) {
    return new LeaseDatabase(
        config(url),
        opener ->
            new LeaseConnectionPool(
                opener,
                keepIdle,
                validateAfterIdle,
                LeaseConnectionPool.MAX_IDLE,
                LeaseConnectionPool.MAX_LIFETIME,
                checkSessions));
  }

  private static LeaseDatabase database(String url) {
    return database(
        url, LeaseConnectionPool.KEEP_IDLE, LeaseConnectionPool.VALIDATE_AFTER_IDLE, true);
  }

  private static LeaseManager manager(LeaseDatabase ldb, String table, String instance) {
    return LeaseManager.builder(ldb).table(table).instance(instance).createTableIfMissing().build();
  }

  // ---- reuse ---------------------------------------------------------------------------------

  @OnEveryDatabase
  void leaseStatementsReuseAKeptConnection(TestDatabase db) throws Exception {
    Opened opened = run(db, LeaseConnectionPool.KEEP_IDLE);
    assertTrue(
        opened.leader() <= 2 && opened.replica() <= 2,
        "physical connections for "
            + STATEMENTS
            + " renewals and "
            + STATEMENTS
            + " polls: "
            + opened);
  }

  /** Negative control: a pool that keeps no connection opens one per statement, as before. */
  @OnEveryDatabase
  void withoutKeptConnectionsEveryStatementOpensOne(TestDatabase db) throws Exception {
    Opened opened = run(db, 0);
    assertFalse(
        opened.leader() <= 2 && opened.replica() <= 2,
        "the count missed one connection per statement: " + opened);
    // a renewal is one statement; a refused claim one (two on MySQL/MariaDB): a connection each
    assertTrue(opened.leader() > STATEMENTS && opened.replica() >= STATEMENTS, "" + opened);
  }

  record Opened(long leader, long replica) {}

  /** A leader renews {@code STATEMENTS} times while a replica polls as often. */
  private static Opened run(TestDatabase db, int keepIdle) throws Exception {
    String url = url(db);
    String table = TestDatabase.uniqueTable("agent_pool_leases");
    try (LeaseDatabase leaderDb =
            database(url, keepIdle, LeaseConnectionPool.VALIDATE_AFTER_IDLE, true);
        LeaseDatabase replicaDb =
            database(url, keepIdle, LeaseConnectionPool.VALIDATE_AFTER_IDLE, true)) {
      try (LeaseManager leader = manager(leaderDb, table, "leader");
          LeaseManager replica = manager(replicaDb, table, "replica")) {
        Lease lease = leader.tryClaim("pool").orElseThrow();
        for (int i = 0; i < STATEMENTS; i++) {
          assertTrue(lease.renew(), "renewal " + i);
          assertTrue(replica.tryClaim("pool").isEmpty(), "poll " + i); // two statements each
        }
        lease.release();
      } finally {
        TestDatabase.dropQuietly(new UrlDataSource(url), table);
      }
      return new Opened(leaderDb.pool().opened(), replicaDb.pool().opened());
    }
  }

  // ---- session state -------------------------------------------------------------------------

  @OnEveryDatabase
  void aKeptConnectionsSessionIsAFreshOnes(TestDatabase db) throws Exception {
    String url = url(db);
    String table = TestDatabase.uniqueTable("agent_pool_leases");
    String scratch = TestDatabase.uniqueTable("agent_pool_scratch");
    try (LeaseDatabase ldb = database(url);
        Connection fresh = DriverManager.getConnection(url)) {
      createScratch(fresh, scratch);
      try (LeaseManager m = manager(ldb, table, "session")) {
        // a statement that fails: its connection is not kept
        assertThrows(
            LeaseException.class,
            () ->
                LeaseInternals.execute(
                    m,
                    "fail on purpose",
                    c -> {
                      try (Statement s = c.createStatement()) {
                        return s.execute("SELECT * FROM agent_pool_no_such_table");
                      }
                    }));
        Lease lease = m.tryClaim("session").orElseThrow();
        assertTrue(lease.renew());
        assertTrue(lease.verify());
        lease.release();
        assertTrue(m.describe("session").isPresent());
        assertTrue(m.available().isAvailable(), m.available().toString());
      }
      assertEquals(1, ldb.pool().idle(), "the connection of the lease statements is kept");
      try (Connection kept = ldb.getConnection()) {
        assertEquals(session(db, fresh), session(db, kept), "after lease statements");
      }
      long discarded = ldb.pool().discarded();
      leaveATransactionOpen(ldb, scratch);
      assertEquals(discarded + 1, ldb.pool().discarded(), "the connection left changed");
      try (Connection next = ldb.getConnection()) {
        assertEquals(session(db, fresh), session(db, next), "after a use left it changed");
      }
      assertEquals(0, rows(fresh, scratch), "the open transaction was rolled back");
    } finally {
      TestDatabase.dropQuietly(new UrlDataSource(url), table, scratch);
    }
  }

  /** Negative control: without the session check, the changed session is handed on. */
  @OnEveryDatabase
  void withoutTheSessionCheckAChangedSessionIsHandedOn(TestDatabase db) throws Exception {
    String url = url(db);
    String scratch = TestDatabase.uniqueTable("agent_pool_scratch");
    try (LeaseDatabase ldb =
            database(
                url,
                LeaseConnectionPool.KEEP_IDLE,
                LeaseConnectionPool.VALIDATE_AFTER_IDLE,
                false);
        Connection fresh = DriverManager.getConnection(url)) {
      createScratch(fresh, scratch);
      leaveATransactionOpen(ldb, scratch);
      try (Connection kept = ldb.getConnection()) {
        assertNotEquals(
            session(db, fresh),
            session(db, kept),
            "the comparison missed the session left with a transaction open");
        kept.rollback();
        kept.setAutoCommit(true);
      }
    } finally {
      TestDatabase.dropQuietly(new UrlDataSource(url), scratch);
    }
  }

  private static void createScratch(Connection c, String table) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + table + " (n INT)");
    }
  }

  /** A use that ends with auto-commit off and an insert not committed (an attempt cut short). */
  private static void leaveATransactionOpen(LeaseDatabase ldb, String scratch) throws SQLException {
    try (Connection c = ldb.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.executeUpdate("INSERT INTO " + scratch + " (n) VALUES (1)");
      }
    }
  }

  private static int rows(Connection c, String table) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + table)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** What a session carries that a lease statement sets or could leave behind. */
  private static Map<String, String> session(TestDatabase db, Connection c) throws SQLException {
    Map<String, String> s = new LinkedHashMap<>();
    s.put("autoCommit", String.valueOf(c.getAutoCommit()));
    s.put("readOnly", String.valueOf(c.isReadOnly()));
    s.put("isolation", String.valueOf(c.getTransactionIsolation()));
    try {
      s.put("networkTimeout", String.valueOf(c.getNetworkTimeout()));
    } catch (SQLFeatureNotSupportedException e) {
      s.put("networkTimeout", "not supported");
    }
    String sql;
    if (db == TestDatabase.POSTGRESQL) {
      sql =
          "SELECT current_setting('lock_timeout'), current_setting('statement_timeout'),"
              + " current_setting('idle_in_transaction_session_timeout'),"
              + " current_setting('transaction_isolation'), current_setting('TimeZone')";
    } else if (db.isMySqlFamily()) {
      // the server is MariaDB for both drivers; @lease_*: what an older lease-core left behind
      sql =
          "SELECT @@session.time_zone, @@session.innodb_lock_wait_timeout,"
              + " @@session.idle_transaction_timeout, @@session.tx_isolation,"
              + " @@session.autocommit, @lease_saved_tz, @lease_saved_lw";
    } else {
      sql = "PRAGMA busy_timeout";
    }
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      assertTrue(rs.next());
      for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
        s.put(rs.getMetaData().getColumnLabel(i), rs.getString(i));
      }
    }
    if (!c.getAutoCommit()) {
      c.rollback(); // the reads above began a transaction: leave none
    }
    return s;
  }

  // ---- broken connections --------------------------------------------------------------------

  @OnEveryServer
  void aConnectionTheServerEndedIsReplacedBeforeAStatementUsesIt(TestDatabase db) throws Exception {
    assertTrue(renewalAfterTheServerEndedTheConnection(db, Duration.ZERO));
  }

  /** Negative control: without validating idle connections, the renewal meets the dead one. */
  @OnEveryServer
  void withoutValidationTheStatementMeetsTheEndedConnection(TestDatabase db) throws Exception {
    assertFalse(renewalAfterTheServerEndedTheConnection(db, Duration.ofHours(1)));
  }

  /**
   * Ends the kept connection on the server, then renews: whether that renewal succeeded. The one
   * after it always does (a failed statement's connection is not kept; a new one is opened).
   */
  private static boolean renewalAfterTheServerEndedTheConnection(
      TestDatabase db, Duration validateAfterIdle) throws Exception {
    String url = url(db);
    String table = TestDatabase.uniqueTable("agent_pool_leases");
    try (LeaseDatabase ldb = database(url, LeaseConnectionPool.KEEP_IDLE, validateAfterIdle, true);
        LeaseManager m = manager(ldb, table, "killed");
        Connection admin = DriverManager.getConnection(url)) {
      Lease lease = m.tryClaim("killed").orElseThrow();
      String id;
      try (Connection c = ldb.getConnection();
          Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  db == TestDatabase.POSTGRESQL
                      ? "SELECT pg_backend_pid()"
                      : "SELECT CONNECTION_ID()")) {
        assertTrue(rs.next());
        id = rs.getString(1);
      }
      assertEquals(1, ldb.pool().idle(), "one kept connection");
      try (Statement s = admin.createStatement()) {
        if (db == TestDatabase.POSTGRESQL) {
          try (ResultSet rs = s.executeQuery("SELECT pg_terminate_backend(" + id + ")")) {
            assertTrue(rs.next() && rs.getBoolean(1));
          }
        } else {
          s.execute("KILL CONNECTION " + id);
        }
      }
      boolean renewed;
      try {
        renewed = lease.renew();
      } catch (LeaseException e) {
        assertNotNull(e.getMessage());
        renewed = false;
      }
      assertTrue(lease.renew(), "the renewal after the failed one");
      assertEquals(2, ldb.pool().opened(), "the ended connection was replaced once");
      lease.release();
      return renewed;
    } finally {
      TestDatabase.dropQuietly(new UrlDataSource(url), table);
    }
  }
}
