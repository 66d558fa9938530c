package dev.lease.core.dialect;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.Fixture;
import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.WeakenedLifecycle;
import dev.lease.core.WeakenedSql;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Putting a pooled session back after a lease attempt. When the attempt's connection broke (its
 * session killed by the server while the renewal waited for a row lock), every restore fails too;
 * the error reported must be the attempt's own, the restore failures only suppressed on it. On
 * MySQL/MariaDB nothing of the lease session stays behind in the connection: no {@code @lease_*}
 * user variables. Negative controls: the old restore order (RESTORE_HIDES_ERROR) and the old user
 * variables (SESSION_USER_VARIABLES).
 *
 * <p>Claim, renew, release and verify are one statement each and change nothing in the session
 * (StepCostTest); the session and its restore are what the scheduler's multi-statement steps and
 * MySQL 8 use. So these attempts run their renewal in that session (STEP_IN_SESSION).
 */
class SessionRestoreTest {

  /** Attempts long enough for the test to find and kill the waiting session. */
  private static final LeaseTimings TIMINGS = Fixture.timings(20_000, 2_000, 15_000, 5_000, 1_000);

  @OnEveryServer
  void anAttemptWhoseConnectionBrokeReportsItsOwnError(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Throwable cause = renewalErrorWhileItsSessionIsKilled(f, null);
      assertTrue(
          thrownByTheRenewal(cause),
          "the renewal's own error, not a restore's: " + describe(cause));
      assertTrue(cause.getSuppressed().length > 0, "the failed restores ride along, suppressed");
      Throwable hidden = renewalErrorWhileItsSessionIsKilled(f, WeakenedSql.restoreHidesError());
      assertFalse(
          thrownByTheRenewal(hidden),
          "negative control: the old restore hides the renewal's error behind its own: "
              + describe(hidden));
    }
  }

  /** Renews while the test holds the row's lock, kills the renewal's session, returns the cause. */
  private static Throwable renewalErrorWhileItsSessionIsKilled(Fixture f, WeakenedSql fault)
      throws Exception {
    LeaseManager.Builder b = f.builder(f.pool(2), "killed-" + fault).timings(TIMINGS);
    WeakenedLifecycle.stepInSession().applyTo(b);
    LeaseManager m = f.build(b, fault);
    String name = "killed-" + fault;
    Lease lease = m.tryClaim(name).orElseThrow();
    try (HikariDataSource locker = f.pool(1);
        Connection lock = locker.getConnection()) {
      lock.setAutoCommit(false);
      try (Statement s = lock.createStatement()) {
        s.executeQuery("SELECT term FROM " + f.table + " WHERE name = '" + name + "' FOR UPDATE")
            .close();
        CompletableFuture<Boolean> renewal = CompletableFuture.supplyAsync(lease::renew);
        kill(f, waitingSession(f, renewal));
        ExecutionException e =
            assertThrows(ExecutionException.class, () -> renewal.get(20, TimeUnit.SECONDS));
        LeaseException failed = assertInstanceOf(LeaseException.class, e.getCause());
        return failed.getCause();
      } finally {
        lock.rollback();
      }
    }
  }

  /** The id of the session whose renewal waits for the row lock. */
  private static long waitingSession(Fixture f, CompletableFuture<?> renewal) throws Exception {
    String sql =
        f.db == TestDatabase.POSTGRESQL
            ? "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE"
                + " 'UPDATE %"
                + f.table
                + "% SET expires_at_ms%'"
            // the step carries a SET STATEMENT prefix on MariaDB, and names the table's partition
            : "SELECT id FROM information_schema.processlist WHERE id <> CONNECTION_ID() AND"
                + " info LIKE '%UPDATE %"
                + f.table
                + "% SET expires_at_ms%'";
    long deadline = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    while (System.nanoTime() < deadline) {
      try (Connection c = f.admin.getConnection();
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(sql)) {
        if (rs.next()) {
          return rs.getLong(1);
        }
      }
      assertFalse(renewal.isDone(), "the renewal ended before it waited for the lock");
      Thread.sleep(20); // polling a bounded wait, not a synchronisation
    }
    throw new AssertionError("no renewal waits for the row lock");
  }

  private static void kill(Fixture f, long session) throws SQLException {
    try (Connection c = f.admin.getConnection();
        Statement s = c.createStatement()) {
      if (f.db == TestDatabase.POSTGRESQL) {
        s.executeQuery("SELECT pg_terminate_backend(" + session + ")").close();
      } else {
        s.execute("KILL " + session);
      }
    }
  }

  /**
   * True if {@code t} was thrown by the renew statement (its stack runs through Dialect.renewStep).
   */
  private static boolean thrownByTheRenewal(Throwable t) {
    return Arrays.stream(t.getStackTrace())
        .anyMatch(
            frame ->
                frame.getMethodName().equals("renewStep")
                    && frame.getClassName().startsWith(Dialect.class.getPackageName()));
  }

  private static String describe(Throwable t) {
    return t
        + (t instanceof SQLException s ? " (SQLState " + s.getSQLState() + ")" : "")
        + ", suppressed "
        + Arrays.toString(t.getSuppressed());
  }

  @OnMySqlFamily
  void noUserVariablesAreLeftInThePooledSession(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertNull(leftInTheSession(f, null), "nothing left behind");
      assertNotNull(
          leftInTheSession(f, WeakenedSql.sessionUserVariables()),
          "negative control: the old restore leaves its @lease_* variables");
    }
  }

  /** The @lease_* variables a lease attempt left in the pool's one connection, or null if none. */
  private static String leftInTheSession(Fixture f, WeakenedSql fault) throws SQLException {
    HikariDataSource one = f.pool(1);
    LeaseManager.Builder b = f.builder(one, "vars-" + fault).timings(TIMINGS);
    WeakenedLifecycle.stepInSession().applyTo(b);
    LeaseManager m = f.build(b, fault);
    m.tryClaim("vars-" + fault).orElseThrow().release();
    try (Connection c = one.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT @lease_saved_tz, @lease_saved_lw");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      String tz = rs.getString(1);
      String lw = rs.getString(2);
      return tz == null && lw == null ? null : tz + " " + lw;
    }
  }
}
