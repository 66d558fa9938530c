package dev.lease.jdbc.internal.fence;

import static dev.lease.jdbc.internal.fence.StubDriver.VERIFY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencedConnections;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

/**
 * The fence's rules ({@link TransactionFence}) as unit tests: each test runs a fenced connection
 * over a {@link StubDriver} and compares, in order, everything that reached the stub's "server"
 * ({@link StubDriver#sent}). No database server is involved; the class runs in milliseconds once
 * the JVM is warm, so a rule can be read here and changed with a quick check.
 *
 * <p><b>The lease.</b> A {@link Lease} comes only from a {@link LeaseManager}, and a manager only
 * from a database: lease-core has no seam that makes one without (its constructors are
 * package-private; the manager detects its dialect from a connection's metadata and checks its
 * table). So the lease here is a real one, claimed by a manager on an embedded SQLite file (in
 * process; a claim takes a few milliseconds), and only the fenced connection is the stub. The fence
 * takes its database from the lease's manager ({@code lease.manager().databaseProduct()}), so it
 * applies its SQLite rules and sends SQLite's verify; the stub answers as SQLite and sqlite-jdbc
 * would, as far as these rules go. That is why every verify in a transaction begun with {@code
 * setAutoCommit(false)} follows a {@code BEGIN} that fails ({@link #BEGIN_REFUSED}): the fence's
 * check that SQLite still has the transaction sqlite-jdbc believes in ({@link
 * SessionView#ensureSqliteTransaction}). The stub is no driver the fence knows ({@link
 * DriverSession#UNKNOWN}): it cannot say whether a transaction is open, and the fence assumes only
 * what is safe. The manager's loss handling runs when a test says so ({@link #deliverLosses}).
 *
 * <p><b>What these tests do not prove</b>: that a database or a driver behaves as the stub does, or
 * that the SQL sent does what it should. They pin the fence's decisions (what it sends, in which
 * order, what it refuses before sending); the database tests ({@code TransactionBoundaryTest},
 * {@code LeaseLossTest}, {@code SqlTextFencingTest}, {@code ServerEndedTransactionTest}, {@code
 * StrictFencingTest} and the rest) remain the proof, on every database. Rules of the other
 * databases (PostgreSQL's proof in the COMMIT's round trip and piggybacked verify, the MySQL
 * drivers' session flags) cannot be reached from here; see {@link StubDriver}.
 *
 * <p>Where a rule has a weakening, its negative control runs the same calls with the rule off and
 * shows the difference the test catches.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FenceRulesTest {

  /**
   * SQLite: before a verify in a transaction begun with {@code setAutoCommit(false)} the fence
   * sends BEGIN, which fails while SQLite still has the transaction open (the usual case).
   */
  static final String BEGIN_REFUSED = "BEGIN -> cannot start a transaction within a transaction";

  /**
   * What the stub is sent up to a transaction's first {@code UPDATE t SET v = 1}, then {@code
   * then}.
   */
  private static List<String> firstUpdateThen(String... then) {
    List<String> sent =
        new java.util.ArrayList<>(
            List.of("setAutoCommit(false)", BEGIN_REFUSED, VERIFY, "UPDATE t SET v = 1"));
    sent.addAll(List.of(then));
    return sent;
  }

  private final Queue<Runnable> losses = new ConcurrentLinkedQueue<>();
  private LeaseManager manager;
  private int names;

  @BeforeAll
  void setUp() throws IOException {
    Path file = Files.createTempFile("fence-rules-", ".db");
    for (String suffix : new String[] {"", "-wal", "-shm"}) {
      Path.of(file + suffix).toFile().deleteOnExit();
    }
    SQLiteConfig config = new SQLiteConfig();
    config.setJournalMode(SQLiteConfig.JournalMode.WAL);
    config.setSynchronous(SQLiteConfig.SynchronousMode.OFF); // a throwaway file: no fsync per claim
    config.setBusyTimeout(10_000);
    SQLiteDataSource sqlite = new SQLiteDataSource(config);
    sqlite.setUrl("jdbc:sqlite:" + file);
    manager =
        LeaseInternals.lossExecutor(
                LeaseManager.builder(sqlite)
                    .table("stub_leases")
                    .instance("holder")
                    // no renewal and no deadline within the class: the rules decide, not time
                    .timings(LeaseTimings.of(Duration.ofMinutes(10)))
                    .failurePolicy(FailurePolicy.logOnly())
                    .createTableIfMissing(),
                losses::add)
            .build();
  }

  @AfterAll
  void tearDown() {
    deliverLosses();
    manager.close();
  }

  private Lease claim() {
    return manager.tryClaim("rule-" + ++names).orElseThrow();
  }

  /** Runs the loss handling the manager has queued: the lease's loss listeners, the fence's too. */
  private void deliverLosses() {
    for (Runnable r; (r = losses.poll()) != null; ) {
      r.run();
    }
  }

  private static FencingOptions.Builder options() {
    return FencingOptions.builder();
  }

  private static Connection fenced(StubDriver stub, FencingOptions.Builder options) {
    return FencedConnections.wrap(stub.connection(), options.build());
  }

  /** What follows a transaction's first statement under a lease. */
  private interface Script {
    void run(Lease lease, Connection c, Statement s) throws SQLException;
  }

  /**
   * What {@code stub} was sent when, under a newly claimed lease, a transaction begun with {@code
   * setAutoCommit(false)} ran {@code UPDATE t SET v = 1} and then {@code script}, and the
   * connection was closed.
   */
  private List<String> afterFirstUpdate(
      StubDriver stub, FencingOptions.Builder options, Script script) throws SQLException {
    Lease lease = claim();
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = fenced(stub, options);
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.executeUpdate("UPDATE t SET v = 1");
      script.run(lease, c, s);
    }
    return stub.sent;
  }

  @Test
  @DisplayName("no lease bound: every call passes through, nothing else is sent (sqlite lease)")
  void noLeaseBoundPassesThrough() throws SQLException {
    StubDriver stub = new StubDriver();
    try (Connection c = fenced(stub, options());
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      s.executeUpdate("UPDATE t SET v = 1");
      s.execute("UPDATE t SET v = 2; COMMIT"); // not even read: no lease, no rules
      c.commit();
    }
    assertEquals(
        List.of(
            "setAutoCommit(false)", "UPDATE t SET v = 1", "UPDATE t SET v = 2; COMMIT", "commit()"),
        stub.sent);
    // once this JVM fenced a MySQL session, a statement without a lease first looks up the
    // session bounds to restore (SessionBounds): by the physical connection, nothing is sent
    stub.calls.remove("Connection.unwrap(java.sql.Connection)");
    assertEquals(
        List.of(
            "Connection.isWrapperFor(dev.lease.jdbc.FencedConnection)", // wrap: fenced already?
            "Connection.createStatement()",
            "Connection.getAutoCommit()", // setAutoCommit: a redundant call changes nothing
            "Connection.setAutoCommit(false)",
            "Statement.executeUpdate(UPDATE t SET v = 1)",
            "Statement.execute(UPDATE t SET v = 2; COMMIT)",
            "Connection.commit()",
            "Statement.close()",
            "Connection.close()"),
        stub.calls,
        "every call made on the stub");
  }

  @Test
  @DisplayName("under a lease: the first statement of a transaction verifies first, once (sqlite)")
  void firstStatementVerifiesOncePerTransaction() throws SQLException {
    // setAutoCommit(false) sends no verify yet (checklist 7)
    List<String> sent =
        afterFirstUpdate(
            new StubDriver(),
            options(),
            (lease, c, s) -> {
              s.executeUpdate("UPDATE t SET v = 2");
              c.commit();
              s.executeUpdate("UPDATE t SET v = 3"); // a new transaction: verifies again
              c.commit();
            });
    assertEquals(
        firstUpdateThen(
            "UPDATE t SET v = 2",
            "commit()",
            BEGIN_REFUSED,
            VERIFY,
            "UPDATE t SET v = 3",
            "commit()"),
        sent);
  }

  @Test
  @DisplayName("refused verify poisons: statements and commit refused, rollback clears it (sqlite)")
  void poisonedUntilRollback() throws SQLException {
    StubDriver stub = new StubDriver().refuseVerify(); // another holder took the lease
    try (Connection c = fenced(stub, options());
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      try (LeaseContext.Scope scope = LeaseContext.bind(claim())) {
        assertState(LeaseLostSQLException.REFUSED, () -> s.executeUpdate("UPDATE t SET v = 1"));
        assertEquals(
            List.of("setAutoCommit(false)", BEGIN_REFUSED, VERIFY + " -> refused"), stub.sent);
        stub.clear();
        assertState(LeaseLostSQLException.POISONED, () -> s.executeUpdate("UPDATE t SET v = 2"));
        assertState(LeaseLostSQLException.POISONED, c::commit);
        assertEquals(List.of(), stub.sent, "refused before anything is sent");
        c.rollback(); // never fails because of a lease
      }
      s.executeUpdate("UPDATE t SET v = 3"); // poisoned, this would be refused too
    }
    assertEquals(List.of("rollback()", "UPDATE t SET v = 3"), stub.sent);
  }

  @Test
  @DisplayName("a driver error: the next statement verifies again (sqlite)")
  void driverErrorReverifies() throws SQLException {
    assertEquals(
        firstUpdateThen(
            "UPDATE t SET v = 2 -> database is locked",
            BEGIN_REFUSED,
            VERIFY, // the error may have ended the transaction, and the verify's lock with it
            "UPDATE t SET v = 3",
            "commit()"),
        afterDriverError(options()));
    // negative control: without the rule the third statement runs unverified
    assertEquals(
        firstUpdateThen(
            "UPDATE t SET v = 2 -> database is locked", "UPDATE t SET v = 3", "commit()"),
        afterDriverError(WeakenedFence.weaken(options(), WeakenedFence.NO_REVERIFY)));
  }

  private List<String> afterDriverError(FencingOptions.Builder options) throws SQLException {
    return afterFirstUpdate(
        new StubDriver().failNext("UPDATE t SET v = 2", "database is locked"),
        options,
        (lease, c, s) -> {
          assertThrows(SQLException.class, () -> s.executeUpdate("UPDATE t SET v = 2"));
          s.executeUpdate("UPDATE t SET v = 3");
          c.commit();
        });
  }

  @Test
  @DisplayName("a savepoint rollback: the next statement verifies again (sqlite)")
  void savepointRollbackReverifies() throws SQLException {
    assertEquals(
        firstUpdateThen(
            "setSavepoint()",
            "UPDATE t SET v = 2",
            "rollback(savepoint)",
            BEGIN_REFUSED,
            VERIFY, // the rollback may have freed locks taken after the savepoint
            "UPDATE t SET v = 3",
            "commit()"),
        afterSavepointRollback(options()));
    // negative control: without the rule the third statement runs unverified
    assertEquals(
        firstUpdateThen(
            "setSavepoint()",
            "UPDATE t SET v = 2",
            "rollback(savepoint)",
            "UPDATE t SET v = 3",
            "commit()"),
        afterSavepointRollback(WeakenedFence.weaken(options(), WeakenedFence.NO_REVERIFY)));
  }

  private List<String> afterSavepointRollback(FencingOptions.Builder options) throws SQLException {
    return afterFirstUpdate(
        new StubDriver(),
        options,
        (lease, c, s) -> {
          Savepoint sp = c.setSavepoint();
          s.executeUpdate("UPDATE t SET v = 2");
          c.rollback(sp);
          s.executeUpdate("UPDATE t SET v = 3");
          c.commit();
        });
  }

  @Test
  @DisplayName("commit after the lease's loss was reported: refused, COMMIT never sent (sqlite)")
  void commitAfterLossIsRefused() throws SQLException {
    // the loss listener has run: the transaction is poisoned
    assertEquals(firstUpdateThen("rollback()"), commitAfterLoss(options(), true));
    // the loss is reported but its listener has not run yet: the lease's own state decides
    assertEquals(firstUpdateThen("rollback()"), commitAfterLoss(options(), false));
    // negative control: a commit that trusts the loss listener alone commits in that window
    assertEquals(
        firstUpdateThen("commit()"),
        commitAfterLoss(
            WeakenedFence.weaken(options(), WeakenedFence.COMMIT_TRUSTS_LOSS_LISTENER), false));
  }

  private List<String> commitAfterLoss(FencingOptions.Builder options, boolean delivered)
      throws SQLException {
    try {
      return afterFirstUpdate(
          new StubDriver(),
          options,
          (lease, c, s) -> {
            LeaseInternals.lostInDatabase(lease); // as when a renewal finds another holder
            if (delivered) {
              deliverLosses();
            }
            try {
              c.commit();
            } catch (LeaseLostSQLException e) {
              assertEquals(LeaseLostSQLException.POISONED, e.getSQLState());
              c.rollback();
            }
          });
    } finally {
      deliverLosses();
    }
  }

  @Test
  @DisplayName("transaction control mixed into a text: refused before anything is sent (sqlite)")
  void mixedTransactionControlIsRefused() throws SQLException {
    StubDriver stub = new StubDriver();
    try (LeaseContext.Scope scope = LeaseContext.bind(claim());
        Connection c = fenced(stub, options());
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      stub.clear();
      assertState(
          LeaseLostSQLException.TRANSACTION_CONTROL_MIXED,
          () -> s.execute("UPDATE t SET v = 1; COMMIT; UPDATE t SET v = 2"));
      assertEquals(List.of(), stub.sent);
    }
    // negative control: the first release's reading (the leading keyword only) sends it
    StubDriver weak = new StubDriver();
    try (LeaseContext.Scope scope = LeaseContext.bind(claim());
        Connection c =
            fenced(weak, WeakenedFence.weaken(options(), WeakenedFence.LEADING_KEYWORD));
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      weak.clear();
      s.execute("UPDATE t SET v = 1; COMMIT; UPDATE t SET v = 2");
      assertEquals(
          List.of(BEGIN_REFUSED, VERIFY, "UPDATE t SET v = 1; COMMIT; UPDATE t SET v = 2"),
          weak.sent);
      c.rollback();
    }
  }

  @Test
  @DisplayName(
      "an autocommit statement under a lease runs as its own verified transaction (sqlite)")
  void autoCommitStatementIsItsOwnVerifiedTransaction() throws SQLException {
    StubDriver stub = new StubDriver();
    try (LeaseContext.Scope scope = LeaseContext.bind(claim());
        Connection c = fenced(stub, options());
        Statement s = c.createStatement()) {
      s.executeUpdate("UPDATE t SET v = 1");
      assertTrue(c.getAutoCommit());
    }
    assertEquals(
        List.of(
            "setAutoCommit(false)",
            VERIFY,
            "UPDATE t SET v = 1",
            "commit()",
            "setAutoCommit(true)"),
        stub.sent);
  }

  @Test
  @DisplayName("close with a verified transaction open rolls it back (sqlite)")
  void closeRollsBackVerifiedTransaction() throws SQLException {
    assertEquals(firstUpdateThen("rollback()"), closedInTransaction(options()));
    // negative control: the pool gets the transaction back open (not every pool rolls back)
    assertEquals(
        firstUpdateThen(),
        closedInTransaction(WeakenedFence.weaken(options(), WeakenedFence.NO_ROLLBACK_AT_CLOSE)));
  }

  private List<String> closedInTransaction(FencingOptions.Builder options) throws SQLException {
    return afterFirstUpdate(new StubDriver(), options, (lease, c, s) -> {});
  }

  private interface Call {
    void run() throws SQLException;
  }

  private static void assertState(String sqlState, Call call) {
    SQLException e = assertThrows(SQLException.class, call::run);
    assertEquals(sqlState, e.getSQLState(), () -> "got " + e);
  }
}
