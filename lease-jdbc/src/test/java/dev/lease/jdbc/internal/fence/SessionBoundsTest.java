package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencingOptions;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import javax.sql.DataSource;

/**
 * Issue 9, path 9: STRICT's session bounds on MySQL/MariaDB ({@code innodb_lock_wait_timeout},
 * MariaDB's {@code idle_transaction_timeout}) live in the pooled physical connection's session. A
 * borrower without a lease must find the session's own values; a borrower with one must find the
 * bounds, also after a pool reset the session.
 */
class SessionBoundsTest {

  /** {lock wait, idle timeout (MariaDB) or -1} of the connection's session. */
  private static long[] bounds(TestDatabase db, Connection c) throws SQLException {
    String sql =
        db == TestDatabase.MARIADB || isMariaDbServer(c)
            ? "SELECT @@session.innodb_lock_wait_timeout, @@session.idle_transaction_timeout"
            : "SELECT @@session.innodb_lock_wait_timeout, -1";
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2)};
    }
  }

  private static boolean isMariaDbServer(Connection c) throws SQLException {
    return c.getMetaData().getDatabaseProductVersion().toLowerCase().contains("mariadb");
  }

  private static FencingOptions.Builder bounds() {
    return FencingOptions.builder()
        .lockWaitTimeout(Duration.ofSeconds(7))
        .idleInTransactionTimeout(Duration.ofSeconds(9));
  }

  @OnMySqlFamily
  void borrowersWithoutALeaseFindTheSessionsOwnValuesAndHoldersFindTheBounds(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 1)) { // one physical connection for every borrower
      long[] own;
      try (Connection c = f.pool.getConnection()) {
        own = bounds(db, c);
      }
      long[] strict = {7, own[1] < 0 ? -1 : 9};
      assertFalse(Arrays.equals(own, strict), "the test needs bounds that differ from the own");
      Lease lease = f.holding("bounds");
      DataSource ds = f.fenced(bounds().listener(f.counter).build());
      for (int round = 0; round < 2; round++) {
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          f.insert(c, 10 + round, lease.term());
          assertArrayEquals(strict, bounds(db, c), "the lease's bounds inside its transaction");
          c.commit();
        }
        try (Connection c = ds.getConnection()) {
          assertArrayEquals(own, bounds(db, c), "a borrower without a lease: the session's own");
        }
      }
      // a pool's session reset: the server's defaults are back; the next verify sees it
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
        assertEquals(own[0], bounds(db, c)[0]);
      }
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 20, lease.term());
        assertArrayEquals(strict, bounds(db, c), "re-applied after the reset");
        c.commit();
      }
    }
  }

  /** Negative control: without the restore the lease's bounds reach the next borrower. */
  @OnMySqlFamily
  void negativeControlWithoutTheRestoreABorrowerWithoutALeaseRunsWithTheLeasesBounds(
      TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 1)) {
      Lease lease = f.holding("bounds");
      DataSource ds =
          f.fenced(
              WeakenedFence.weaken(bounds().listener(f.counter), WeakenedFence.NO_SESSION_RESTORE)
                  .build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        c.commit();
      }
      try (Connection c = ds.getConnection()) {
        assertEquals(7, bounds(db, c)[0], "the lease's lock wait leaked to this borrower");
      }
    }
  }

  /**
   * Issue 36: the bounds cannot be read once per session. A trigger (or a stored function, a
   * procedure) changes them inside an ordinary statement the fence reads as a plain INSERT; the
   * next transaction's verify reads what the session has and sets them again.
   */
  @OnMySqlFamily
  void aTriggerThatChangesTheBoundsIsSeenByTheNextVerify(TestDatabase db) throws Exception {
    long[] own = new long[2];
    long[] next = boundsAfterATriggerChangedThem(db, own, false, new WeakenedFence[0]);
    assertArrayEquals(new long[] {7, own[1] < 0 ? -1 : 9}, next, "set again by the next verify");
  }

  /**
   * The same with {@code allowMultiQueries=true}: the next transaction's verify rides with its
   * first statement, where the fence's record says the bounds are set; the carried verify reads
   * what the session has and sets them again before the transaction goes on.
   */
  @OnMySqlFamily
  void aTriggerThatChangesTheBoundsIsSeenByTheNextCarriedVerify(TestDatabase db) throws Exception {
    long[] own = new long[2];
    long[] next = boundsAfterATriggerChangedThem(db, own, true, new WeakenedFence[0]);
    assertArrayEquals(new long[] {7, own[1] < 0 ? -1 : 9}, next, "set again by the carried verify");
  }

  /** Negative control of the carried verify: the record trusted, the trigger's bounds stay. */
  @OnMySqlFamily
  void negativeControlBoundsReadOncePerSessionMissTheTriggersChangeWithACarriedVerify(
      TestDatabase db) throws Exception {
    long[] next =
        boundsAfterATriggerChangedThem(
            db, new long[2], true, new WeakenedFence[] {WeakenedFence.BOUNDS_READ_ONCE});
    assertEquals(1000, next[0], "the trigger's lock wait stayed for the lease's transaction");
  }

  /**
   * Negative control: a fence that trusts its record of the bounds leaves the trigger's in place.
   */
  @OnMySqlFamily
  void negativeControlBoundsReadOncePerSessionMissTheTriggersChange(TestDatabase db)
      throws Exception {
    long[] next =
        boundsAfterATriggerChangedThem(
            db, new long[2], false, new WeakenedFence[] {WeakenedFence.BOUNDS_READ_ONCE});
    assertEquals(1000, next[0], "the trigger's lock wait stayed for the lease's transaction");
  }

  /**
   * Two transactions under one lease on one physical connection; in the first, an INSERT fires a
   * trigger (for that row only) that sets the session's bounds to its own values. Returns the
   * bounds inside the second ({@code own} receives the session's values before any lease). With
   * {@code carried}, the connections allow multi-statement texts and the second transaction must
   * carry its verify in its first statement (checked: a run where it did not proves nothing).
   */
  private static long[] boundsAfterATriggerChangedThem(
      TestDatabase db, long[] own, boolean carried, WeakenedFence[] weakened) throws Exception {
    try (Fixture f = new Fixture(db, 1, carried)) {
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        System.arraycopy(bounds(db, c), 0, own, 0, 2);
        s.execute(
            "CREATE TRIGGER "
                + f.data
                + "_t BEFORE INSERT ON "
                + f.data
                + " FOR EACH ROW IF NEW.id = 1 THEN SET SESSION innodb_lock_wait_timeout = 1000"
                + (own[1] >= 0 ? ", SESSION idle_transaction_timeout = 0" : "")
                + "; END IF");
      }
      Lease lease = f.holding("bounds");
      FencingOptions.Builder options = bounds().listener(f.counter);
      DataSource ds =
          f.fenced(
              (weakened.length == 0 ? options : WeakenedFence.weaken(options, weakened)).build());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term()); // the verify sets the bounds, then the trigger changes them
        assertEquals(1000, bounds(db, c)[0], "the trigger ran in the session");
        c.commit();
        f.insert(c, 2, lease.term());
        long[] next = bounds(db, c);
        c.commit();
        assertEquals(
            carried ? 1 : 0,
            c.unwrap(FencingConnection.class).fence.piggybacked(),
            "transactions that carried their verify");
        return next;
      }
    }
  }
}
