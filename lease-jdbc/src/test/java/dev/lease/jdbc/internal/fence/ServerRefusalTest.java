package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencedDriver;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 25: the database refuses, and every commit carries its proof. Each safety test runs with
 * the real mechanism ({@link Refusal#SERVER}) and, as its negative control, with the previous one
 * plugged in from here ({@link Refusal#CLIENT}: the client reads the verify's empty result, the
 * commit trusts the fence's picture), which must let the stale effect through.
 */
class ServerRefusalTest {

  private static final AtomicInteger IDS = new AtomicInteger();

  private static Lease stale(Fixture f) throws SQLException {
    Lease lease = f.holding("r" + IDS.incrementAndGet());
    f.takeOver(lease); // the database gives the name to a successor; the holder does not know yet
    return lease;
  }

  private static FencedDataSource fenced(Fixture f, Refusal refusal) {
    return fenced(f, refusal, FencingMode.STRICT);
  }

  private static FencedDataSource fenced(Fixture f, Refusal refusal, FencingMode mode) {
    FencingOptions.Builder b = WeakenedFence.refusal(f.options().mode(mode), refusal);
    if (refusal == Refusal.CLIENT) {
      // the whole previous mechanism: a refusal was not reported to the lease either (issue 23),
      // so the next statement is sent again instead of being refused locally
      WeakenedFence.weaken(b, WeakenedFence.REFUSAL_NOT_REPORTED);
    }
    return f.fenced(b.build());
  }

  // ---- 1. the verify fails in the server ---------------------------------------------------

  @OnEveryDatabase
  void aRefusedVerifyIsAnErrorOfTheServerKeptAsTheCause(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = stale(f);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = fenced(f, Refusal.SERVER).getConnection()) {
        c.setAutoCommit(false);
        LeaseLostSQLException e =
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, lease.term()));
        assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
        assertNotNull(e.getCause(), "the server's error is the cause");
        assertTrue(LeaseInternals.isRefusal((SQLException) e.getCause()), e.getCause().toString());
        c.rollback();
      }
      // negative control: the previous verify returned no row; nothing was raised in the server
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = fenced(f, Refusal.CLIENT).getConnection()) {
        c.setAutoCommit(false);
        LeaseLostSQLException e =
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, lease.term()));
        assertNull(e.getCause(), "the client read an empty result");
        c.rollback();
      }
      assertEquals(0, f.count(null));
    }
  }

  @OnEveryDatabase
  void aHeldLeaseStillVerifiesAndCommits(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("h" + IDS.incrementAndGet());
      FencedDataSource ds = fenced(f, Refusal.SERVER);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        f.insert(c, 2, lease.term());
        c.commit();
        c.setAutoCommit(true);
        f.insert(c, 3, lease.term()); // autocommit: its own verified transaction
      }
      assertEquals(3, f.count(null));
    }
  }

  /**
   * Issue 25 item 3: {@code <verify>;<statement>} in one round trip. With the server's refusal the
   * statement never runs: a sequence (not transactional) does not move. The previous mechanism ran
   * it and read the verify's empty result afterwards: the sequence moved.
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresBothMechanisms")
  void thePiggybackedStatementDoesNotRunWhenTheVerifyRefuses(TestDatabase db, String mechanism)
      throws Exception {
    boolean server = mechanism.equals("server");
    try (Fixture f = new Fixture(db, 2)) {
      String seq = TestDatabase.uniqueTable("rs");
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("CREATE SEQUENCE " + seq);
      }
      try {
        Lease lease = stale(f);
        FencedDataSource ds = fenced(f, server ? Refusal.SERVER : Refusal.CLIENT);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          try (Statement s = c.createStatement()) {
            assertThrows(
                LeaseLostSQLException.class, () -> s.executeQuery("SELECT nextval('" + seq + "')"));
          }
          c.rollback();
          try (PreparedStatement ps = c.prepareStatement("SELECT setval(?, 42)")) {
            ps.setString(1, seq);
            assertThrows(LeaseLostSQLException.class, ps::executeQuery);
          }
          c.rollback();
        }
        long last;
        boolean called;
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT last_value, is_called FROM " + seq)) {
          rs.next();
          last = rs.getLong(1);
          called = rs.getBoolean(2);
        }
        if (server) {
          assertEquals(false, called, "nextval never ran");
          assertEquals(1, last, "setval never ran");
        } else {
          assertEquals(42, last, "negative control: the previous mechanism ran the statements");
        }
      } finally {
        TestDatabase.dropQuietly(f.pool, seq);
      }
    }
  }

  static Stream<Object[]> postgresBothMechanisms() {
    return Stream.of(
        new Object[] {TestDatabase.POSTGRESQL, "server"},
        new Object[] {TestDatabase.POSTGRESQL, "client"});
  }

  // ---- 3. every commit carries its proof ---------------------------------------------------

  /**
   * A write the fence never saw (through the driver's own connection, reached while no lease was
   * bound), then the fenced {@code commit()} under a lease the successor took: the commit proves
   * the lease (PostgreSQL: in the COMMIT's own round trip) and is refused. The previous commit
   * trusted the fence's picture (no transaction verified, nothing to check) and committed it.
   */
  @OnEveryServer
  void aCommitProvesWritesTheFenceDidNotSee(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = stale(f);
      for (Refusal refusal : new Refusal[] {Refusal.SERVER, Refusal.CLIENT}) {
        FencedDataSource ds = fenced(f, refusal);
        try (Connection c = ds.getConnection()) {
          Connection raw = driverConnection(db, c); // no lease bound: nothing is checked
          try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
            c.setAutoCommit(false);
            f.insert(raw, refusal == Refusal.SERVER ? 1 : 2, lease.term());
            if (refusal == Refusal.SERVER) {
              LeaseLostSQLException e = assertThrows(LeaseLostSQLException.class, c::commit);
              assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
              c.rollback();
            } else {
              c.commit(); // negative control: trusted the picture
            }
          }
          c.setAutoCommit(true);
        }
      }
      assertEquals(0, f.count("id = 1"), "the proof refused the raw write");
      assertEquals(1, f.count("id = 2"), "negative control: the raw write committed");
    }
  }

  /**
   * A pool's request boundary with a transaction the fence never verified still open under the
   * lease (a write through the driver's own connection): it is rolled back, so the next borrower
   * cannot commit it. The previous mechanism knew of no transaction and left it open.
   */
  @OnEveryServer
  void aRequestBoundaryRollsBackWritesTheFenceDidNotSee(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = stale(f);
      for (Refusal refusal : new Refusal[] {Refusal.SERVER, Refusal.CLIENT}) {
        int id = refusal == Refusal.SERVER ? 1 : 2;
        try (Connection c = fenced(f, refusal).getConnection()) {
          Connection raw = driverConnection(db, c);
          c.beginRequest();
          try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
            c.setAutoCommit(false);
            f.insert(raw, id, lease.term());
            c.endRequest();
          }
          c.commit(); // the next borrower, no lease bound
          c.setAutoCommit(true);
        }
      }
      assertEquals(0, f.count("id = 1"), "rolled back at the request boundary");
      assertEquals(1, f.count("id = 2"), "negative control: committed by the next borrower");
    }
  }

  /**
   * PostgreSQL: the lease changes hands while a verified transaction is open (the test's takeover
   * writes the row directly). The verify riding in the COMMIT refuses it; the previous commit
   * trusted its earlier verify. In VERIFY mode, where every PostgreSQL commit carries the proof: a
   * STRICT commit carries it only in doubt (CommitProofTest), because a real claim would wait for
   * STRICT's lock.
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresBothMechanisms")
  void theCommitsProofRidesInItsRoundTrip(TestDatabase db, String mechanism) throws Exception {
    boolean server = mechanism.equals("server");
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("c" + IDS.incrementAndGet());
      FencedDataSource ds = fenced(f, server ? Refusal.SERVER : Refusal.CLIENT, FencingMode.VERIFY);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term()); // verified
        f.takeOver(lease);
        if (server) {
          assertThrows(LeaseLostSQLException.class, c::commit);
          c.rollback();
        } else {
          c.commit();
        }
      }
      assertEquals(server ? 0 : 1, f.count(null));
    }
  }

  /**
   * The same for a COMMIT written as SQL (its proof runs just before it) and setAutoCommit(true),
   * in VERIFY mode; under STRICT they prove themselves in doubt, as {@code commit()} does.
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresBothMechanisms")
  void everyCommitPathCarriesTheProof(TestDatabase db, String mechanism) throws Exception {
    boolean server = mechanism.equals("server");
    try (Fixture f = new Fixture(db, 2)) {
      FencedDataSource ds = fenced(f, server ? Refusal.SERVER : Refusal.CLIENT, FencingMode.VERIFY);
      for (int path = 1; path <= 2; path++) {
        Lease lease = f.holding("q" + IDS.incrementAndGet());
        int id = path;
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          f.insert(c, id, lease.term());
          f.takeOver(lease);
          SqlCommit commit =
              path == 1
                  ? () -> {
                    try (Statement s = c.createStatement()) {
                      s.execute("COMMIT");
                    }
                  }
                  : () -> c.setAutoCommit(true);
          if (server) {
            assertThrows(LeaseLostSQLException.class, commit::run);
            c.rollback();
          } else {
            commit.run();
          }
          c.setAutoCommit(true);
        }
      }
      assertEquals(server ? 0 : 2, f.count(null));
    }
  }

  @FunctionalInterface
  interface SqlCommit {
    void run() throws SQLException;
  }

  // ---- 4. the server's own transaction state -----------------------------------------------

  /**
   * Issue 25 item 5: MariaDB's {@code CREATE TEMPORARY SEQUENCE} commits the transaction (and frees
   * the verify's lock). The driver's status flags say so; the holder's next statement verifies
   * again and is refused once a successor claimed. The previous fence, which did not read them, let
   * the next statement and the commit through.
   */
  @OnMySqlFamily
  void anImplicitCommitIsReadFromTheServersState(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      for (Refusal refusal : new Refusal[] {Refusal.SERVER, Refusal.CLIENT}) {
        Lease lease = f.holding("i" + IDS.incrementAndGet());
        int base = refusal == Refusal.SERVER ? 0 : 10;
        String seq = TestDatabase.uniqueTable("ts");
        try (LeaseContext.Scope scope = LeaseContext.bind(lease);
            // the lexer knows this one commits (the review): read as one it does not know
            Connection c =
                f.fenced(
                        WeakenedFence.weaken(
                                WeakenedFence.refusal(f.options(), refusal),
                                WeakenedFence.UNKNOWN_IMPLICIT_COMMITS)
                            .build())
                    .getConnection()) {
          c.setAutoCommit(false);
          f.insert(c, base + 1, lease.term()); // verified, under the lock
          try (Statement s = c.createStatement()) {
            s.execute("CREATE TEMPORARY SEQUENCE " + seq); // commits: the lock is gone
          }
          f.takeOver(lease); // would wait for the share lock if the transaction still held it
          if (refusal == Refusal.SERVER) {
            LeaseLostSQLException e =
                assertThrows(LeaseLostSQLException.class, () -> f.insert(c, base + 2, 0));
            assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
            c.rollback();
          } else {
            f.insert(c, base + 2, 0);
            c.commit(); // negative control: the stale write commits
          }
        }
      }
      assertEquals(1, f.count("id = 1"), "committed by the implicit commit, under the lock");
      assertEquals(0, f.count("id = 2"), "the write after the claim was refused");
      assertEquals(1, f.count("id = 12"), "negative control: the stale write committed");
    }
  }

  // ---- 2. drivers that replay ----------------------------------------------------------------

  @Test
  void silentReplayOptionsAreFoundInUrlsAndProperties() {
    assertEquals(
        "transactionReplay=true",
        DriverSession.silentReplayOption(
            "jdbc:mariadb://h/db?user=x&transactionReplay=true", null));
    assertEquals(
        "autoReconnect=true",
        DriverSession.silentReplayOption("jdbc:mysql://h/db?autoReconnect=TRUE", null));
    Properties p = new Properties();
    p.setProperty("autoReconnectForPools", "true");
    assertEquals(
        "autoReconnectForPools=true", DriverSession.silentReplayOption("jdbc:mysql://h/db", p));
    assertNull(
        DriverSession.silentReplayOption("jdbc:mariadb://h/db?transactionReplay=false", p0()));
    assertNull(DriverSession.silentReplayOption("jdbc:postgresql://h/db", null));
  }

  private static Properties p0() {
    return new Properties();
  }

  @Test
  void aFencedUrlWithTransactionReplayIsRefused() {
    FencedDriver.register();
    SQLException e =
        assertThrows(
            SQLException.class,
            () ->
                DriverManager.getConnection(
                    "jdbc:fenced:" + TestDatabase.MARIADB.url() + "&transactionReplay=true"));
    assertTrue(e.getMessage().contains("transactionReplay=true"), e.getMessage());
  }

  /**
   * A DataSource whose driver replays (MariaDB Connector/J {@code transactionReplay=true}, MySQL
   * Connector/J {@code autoReconnect=true}): the first lease-bound statement is refused with what
   * to do; without a lease the connection works.
   */
  @OnMySqlFamily
  void aDataSourceWhoseDriverReplaysIsRefusedUnderALease(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 1)) {
      String option = db == TestDatabase.MARIADB ? "transactionReplay=true" : "autoReconnect=true";
      try (HikariDataSource replaying = pool(db.url(), option)) {
        Lease lease = f.holding("d" + IDS.incrementAndGet());
        FencedDataSource ds = FencedDataSource.wrap(replaying, f.options().build());
        try (Connection c = ds.getConnection()) {
          try (Statement s = c.createStatement()) {
            s.execute("SELECT 1"); // no lease: passes through
          }
          try (LeaseContext.Scope scope = LeaseContext.bind(lease);
              Statement s = c.createStatement()) {
            SQLException e = assertThrows(SQLException.class, () -> s.execute("SELECT 1"));
            assertTrue(e.getMessage().contains(option), e.getMessage());
          }
        }
      }
    }
  }

  /**
   * Issue 25 item 4, the mechanism itself (the fence refuses such drivers up front): MariaDB
   * Connector/J with {@code transactionReplay=true} replays a transaction, its verify included, on
   * a new session after its own was killed. With the refusing verify the replayed verify fails in
   * the server once a successor has claimed, so the replayed transaction cannot commit; the
   * previous verify's empty answer was never read by anyone and the stale write committed.
   */
  @Test
  void aReplayedVerifyIsRefusedByTheServer() throws Exception {
    TestDatabase db = TestDatabase.MARIADB;
    try (Fixture f = new Fixture(db, 2);
        // the driver reconnects only in a failover mode (sequential: one host is enough)
        HikariDataSource replaying =
            pool(
                db.url().replace("jdbc:mariadb://", "jdbc:mariadb:sequential://"),
                "transactionReplay=true")) {
      for (boolean server : new boolean[] {true, false}) {
        Lease lease = f.holding("p" + IDS.incrementAndGet());
        String sql =
            server
                ? LeaseInternals.verifySql(lease, true)
                : LeaseInternals.clientCheckedVerifySql(lease, true);
        int id = server ? 1 : 2;
        Throwable outcome = null;
        try (Connection c = replaying.getConnection()) {
          c.setAutoCommit(false);
          long session;
          try (PreparedStatement ps = c.prepareStatement(sql)) {
            LeaseInternals.bindVerify(lease, ps, 1, true, Duration.ofMinutes(1));
            try (ResultSet rs = ps.executeQuery()) {
              assertTrue(rs.next(), "held");
            }
          }
          try (Statement s = c.createStatement();
              ResultSet rs = s.executeQuery("SELECT CONNECTION_ID()")) {
            rs.next();
            session = rs.getLong(1);
          }
          f.insert(c, id, lease.term());
          try (Connection admin = f.pool.getConnection();
              Statement s = admin.createStatement()) {
            s.execute("KILL CONNECTION " + session); // our own session: the holder's "crash"
          }
          f.takeOver(lease); // the lock died with the session: the successor claims
          try {
            f.insert(c, id + 100, lease.term()); // the driver reconnects and replays
            c.commit();
          } catch (SQLException e) {
            outcome = e;
            try {
              c.rollback();
            } catch (SQLException r) {
              // the session may be gone again
            }
          }
        }
        if (server) {
          assertNotNull(outcome, "the replayed verify failed in the server");
          assertTrue(refusal(outcome), "the replay failed on the verify's refusal: " + outcome);
          assertEquals(0, f.count("id = 1"));
          assertEquals(0, f.count("id = 101"));
        } else {
          assertNull(outcome, "negative control: the replay went through");
          assertEquals(1, f.count("id = 102"), "negative control: the stale write committed");
        }
      }
    }
  }

  private static boolean refusal(Throwable t) {
    for (Throwable x = t; x != null; x = x.getCause()) {
      if (x instanceof SQLException e && LeaseInternals.isRefusal(e)) {
        return true;
      }
      for (Throwable s : x.getSuppressed()) {
        if (refusal(s)) {
          return true;
        }
      }
    }
    return false;
  }

  /** The driver's own connection under {@code c}, as an application can reach it. */
  private static Connection driverConnection(TestDatabase db, Connection c) throws Exception {
    String type =
        switch (db) {
          case POSTGRESQL -> "org.postgresql.PGConnection";
          case MYSQL -> "com.mysql.cj.jdbc.JdbcConnection";
          default -> "org.mariadb.jdbc.Connection";
        };
    return (Connection) c.unwrap(Class.forName(type));
  }

  private static HikariDataSource pool(String url, String option) {
    HikariConfig cfg = new HikariConfig();
    cfg.setJdbcUrl(url + "&" + option);
    cfg.setMaximumPoolSize(1);
    cfg.setMinimumIdle(0);
    cfg.setConnectionTimeout(10_000);
    cfg.setPoolName("replay-" + TestDatabase.uniqueTable("p"));
    return new HikariDataSource(cfg);
  }
}
