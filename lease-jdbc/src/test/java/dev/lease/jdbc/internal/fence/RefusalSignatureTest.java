package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.OnPostgresql;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The server's refusal is told from an application's error by this process's nonce in the marker
 * and by the refusal's own SQLState; a read-only PostgreSQL transaction's commit carries the plain
 * verify. Each test beside its negative control ({@link WeakenedFence#REFUSAL_BY_MARKER_TEXT}, and
 * for {@code ReviewFenceHolesTest}'s aNotifyInAReadOnlyTransactionIsNotDeliveredAfterTheTakeover
 * {@link WeakenedFence#NO_READ_ONLY_PROOF}).
 */
class RefusalSignatureTest {

  private static final AtomicInteger IDS = new AtomicInteger();

  /**
   * Healthy path: the fence takes any error whose message contains the refusal marker for the
   * server's refusal of the verify ({@code Dialect.isRefusal} looks only at the message text) and
   * marks the lease lost. Errors echo user data: a duplicate key whose value is the marker text (a
   * user name, a form field) makes a healthy holder lose its lease.
   */
  @OnEveryServer
  void userDataInAnErrorMessageDoesNotLoseAHeldLease(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      UserDataError r = duplicateKeyOfTheMarkerText(f, f.options());
      assertAll(
          () ->
              assertTrue(
                  r.lease.isHeld(),
                  "a healthy lease was marked lost ("
                      + r.lease.lossReason()
                      + ") by user data in an error message"),
          () ->
              assertFalse(
                  r.error instanceof LeaseLostSQLException,
                  "a duplicate key reported as a lost lease: " + r.error));
    }
  }

  /**
   * Negative control: the check before the review (the marker anywhere in the message) takes a
   * duplicate key on a user's value holding the marker for the server's refusal and loses the
   * lease.
   */
  @OnEveryServer
  void controlTheMarkerTextAloneLosesAHeldLeaseToUserData(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      UserDataError r =
          duplicateKeyOfTheMarkerText(
              f, WeakenedFence.weaken(f.options(), WeakenedFence.REFUSAL_BY_MARKER_TEXT));
      assertAll(
          () -> assertFalse(r.lease.isHeld(), "the weakened check kept the lease"),
          () -> assertTrue(r.error instanceof LeaseLostSQLException, r.error.toString()));
    }
  }

  private record UserDataError(Lease lease, SQLException error) {}

  /**
   * Under a held lease, an INSERT whose duplicate key is the refusal's marker text (a user's input,
   * already taken); the transaction is rolled back. The lease and the error.
   */
  private static UserDataError duplicateKeyOfTheMarkerText(
      Fixture f, FencingOptions.Builder options) throws Exception {
    String users = TestDatabase.uniqueTable("ru");
    createUsers(f, users);
    try {
      Lease lease = f.holding("c" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(options.build()).getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        try (PreparedStatement ps =
            c.prepareStatement("INSERT INTO " + users + " (k) VALUES (?)")) {
          ps.setString(1, "LF001 lease not held");
          SQLException e = assertThrows(SQLException.class, ps::executeUpdate);
          c.rollback();
          return new UserDataError(lease, e);
        }
      }
    } finally {
      TestDatabase.dropQuietly(f.pool, users);
    }
  }

  /**
   * An application error with the refusal's own SQLState whose message holds the documented marker
   * (user data cast like the verify casts): without this process's nonce it is not a refusal. This
   * is what the nonce adds to the SQLState check.
   */
  @OnEveryServer
  void theRefusalsOwnErrorOnUserDataDoesNotLoseAHeldLease(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("s" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        String forged =
            db == TestDatabase.POSTGRESQL
                ? "SELECT CAST('LF001 lease not held: 0' AS bigint)" // 22P02
                : "SELECT 9223372036854775807 + LENGTH('LF001 lease not held')"; // 1690 (22003)
        SQLException e;
        try (Statement s = c.createStatement()) {
          e = assertThrows(SQLException.class, () -> s.executeQuery(forged).close());
        }
        c.rollback();
        SQLException shown = e;
        assertAll(
            () -> assertTrue(shown.getMessage().contains("LF001 lease not held"), shown.toString()),
            () ->
                assertTrue(
                    "22P02".equals(shown.getSQLState()) || shown.getErrorCode() == 1690,
                    "not the refusal's SQLState: " + shown),
            () ->
                assertTrue(
                    lease.isHeld(), "a healthy lease was marked lost: " + lease.lossReason()),
            () -> assertFalse(shown instanceof LeaseLostSQLException, shown.toString()));
      }
    }
  }

  /**
   * Negative control: a read-only PostgreSQL transaction committed without its proof, as before the
   * review, delivers the stale holder's NOTIFY after the successor's claim.
   */
  @OnPostgresql
  void controlAReadOnlyCommitWithoutProofDeliversTheNotify(TestDatabase db) throws Exception {
    assertEquals(1, notificationsAfterTakeover(db, WeakenedFence.NO_READ_ONLY_PROOF));
  }

  /** The fixed fence, and its commit in the same round trip as the proof: nothing delivered. */
  @OnPostgresql
  void aReadOnlyCommitCarriesThePlainProof(TestDatabase db) throws Exception {
    assertEquals(0, notificationsAfterTakeover(db));
  }

  /** A read-only transaction under a held lease still commits (its NOTIFY is delivered). */
  @OnPostgresql
  void aReadOnlyTransactionUnderAHeldLeaseCommits(TestDatabase db) throws Exception {
    String channel = TestDatabase.uniqueTable("ch");
    try (Fixture f = new Fixture(db, 3);
        Connection listener = db.unpooled().getConnection()) {
      listen(listener, channel);
      Lease lease = f.holding("h" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection()) {
        c.setReadOnly(true);
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("NOTIFY " + channel + ", 'fresh'");
        }
        c.commit();
        c.setReadOnly(false);
      }
      assertEquals(1, received(listener));
      assertTrue(lease.isHeld());
    }
  }

  private static int notificationsAfterTakeover(TestDatabase db, WeakenedFence... weakenings)
      throws Exception {
    String channel = TestDatabase.uniqueTable("ch");
    try (Fixture f = new Fixture(db, 3);
        Connection listener = db.unpooled().getConnection()) {
      listen(listener, channel);
      Lease lease = f.holding("n" + IDS.incrementAndGet());
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c =
              f.fenced(WeakenedFence.weaken(f.options(), weakenings).build()).getConnection()) {
        c.setReadOnly(true);
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("NOTIFY " + channel + ", 'stale'");
        }
        f.takeOver(lease);
        try {
          c.commit();
        } catch (LeaseLostSQLException expected) {
          c.rollback();
        }
        c.setReadOnly(false);
      }
      return received(listener);
    }
  }

  private static void listen(Connection listener, String channel) throws SQLException {
    listener.setAutoCommit(true);
    try (Statement s = listener.createStatement()) {
      s.execute("LISTEN " + channel);
    }
  }

  private static int received(Connection listener) throws SQLException {
    try (Statement s = listener.createStatement()) {
      s.execute("SELECT 1"); // pgjdbc reads pending notifications with the next response
    }
    org.postgresql.PGNotification[] got =
        listener.unwrap(org.postgresql.PGConnection.class).getNotifications(1000);
    return got == null ? 0 : got.length;
  }

  private static void createUsers(Fixture f, String users) throws SQLException {
    try (Connection c = f.pool.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + users + " (k VARCHAR(60) PRIMARY KEY)");
      s.execute("INSERT INTO " + users + " (k) VALUES ('LF001 lease not held')");
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }
}
