package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnMySqlFamily;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import legacy.LegacyApp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * XA and vendor interfaces on PostgreSQL, in leader mode, as a legacy application uses them ({@code
 * legacy.XaAndVendor}):
 *
 * <ul>
 *   <li>XA: three real two-phase commits through {@code PGXADataSource} (start, INSERT through the
 *       XA connection's handle, end, PREPARE TRANSACTION, COMMIT PREPARED) commit on the leader; on
 *       a replica every branch is refused at its first statement and rolled back; either way no
 *       prepared transaction and no session is left behind. Negative control: without the physical
 *       scope of {@code getXAConnection} (and the vendor face that would hide it), pgjdbc's XA code
 *       fails with the issue's ClassCastException and leaks a session per attempt.
 *   <li>Vendor interfaces: {@code (PGConnection) DriverManager.getConnection(..)}, a call on it as
 *       a transaction's first act, a reflective call, and c3p0's raw-connection operation on a
 *       pooled handle work on the leader and are refused on a replica (verified before the driver
 *       is reached). Negative control: without vendor faces the cast fails.
 *   <li>XA on MySQL/MariaDB under STRICT: a two-phase prepare of a branch that ran under the lease
 *       is refused (XA PREPARE releases the verify's lock), also on a resource the agent cannot
 *       link with the branch's handle ({@code legacy.SqlXaResource}, fail closed); one phase
 *       commits. Negative controls: with either check off, the branch commits after a takeover.
 * </ul>
 */
class XaAndVendorIT {

  private static final String LEASE = "xa-leader";
  private static final int XA_TRANSACTIONS = 3;

  /** Our transaction manager's format id: the gids of its prepared transactions start so. */
  private static final String GID_PREFIX = "4660_";

  private static final DataSource PG = new UrlDataSource(TestDatabase.POSTGRESQL.url());

  private static String args(LegacyDatabase d, String instance) {
    return d.agentArgs("mode=leader,lease=" + LEASE + ",lease-duration=2s,instance=" + instance);
  }

  private static AppProcess app(LegacyDatabase d, String instance, String disable, String... args) {
    return app(args(d, instance), instance, disable, args);
  }

  /** The legacy application as {@code instance} with the agent's {@code agentArgs}. */
  private static AppProcess app(String agentArgs, String instance, String disable, String... args) {
    List<String> jvm = disable == null ? List.of() : controlOptions(disable);
    return AppProcess.start(
        instance,
        AppProcess.JAVA_17,
        agentArgs,
        Map.of(),
        jvm,
        false,
        LegacyApp.class.getName(),
        args);
  }

  private static AppProcess xa(LegacyDatabase d, String instance, String appName, String disable)
      throws InterruptedException {
    AppProcess app =
        app(
            d,
            instance,
            disable,
            "xa",
            d.url,
            d.events,
            instance,
            Integer.toString(XA_TRANSACTIONS),
            appName);
    app.awaitLine(l -> l.equals("XA-DONE"), "the end of the XA transactions");
    return app;
  }

  @Test
  void twoPhaseCommitsCommitFencedOnTheLeader_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      String appName = "xa-" + d.events;
      try (AppProcess app = xa(d, "L", appName, null)) {
        List<String> committed = lines(app, "XA-COMMITTED");
        assertEquals(XA_TRANSACTIONS, committed.size(), app.describe());
        assertEquals(Set.of(1, 2, 3), d.committed("L"));
        assertNull(leftBehind(appName), app.describe());
      }
    }
  }

  @Test
  void replicaBranchesAreRefusedAndNothingLeaks_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      d.holdLeaseElsewhere(LEASE);
      String appName = "xa-" + d.events;
      try (AppProcess app = xa(d, "R", appName, null)) {
        List<String> refused = lines(app, "XA-REFUSED");
        assertEquals(XA_TRANSACTIONS, refused.size(), app.describe());
        assertTrue(
            refused.stream().allMatch(l -> l.contains("LeaseLostSQLException")), app.describe());
        assertTrue(d.committed("R").isEmpty());
        assertNull(leftBehind(appName), app.describe());
      }
    }
  }

  /** Negative control: the issue's ClassCastException and leaked sessions come back. */
  @Test
  void withoutTheXaScopePgjdbcXaFailsAndLeaks_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      String appName = "xa-" + d.events;
      try (AppProcess app = xa(d, "L", appName, "pooled-scopes,vendor-faces")) {
        assertTrue(
            lines(app, "XA-REFUSED").stream().allMatch(l -> l.contains("ClassCastException")),
            app.describe());
        String leak = leftBehind(appName);
        assertNotNull(leak, "the check missed the leaked sessions" + app.describe());
        System.out.println("without the XA scope: " + leak);
      }
    }
  }

  /**
   * Real 2PC across a loss (fencing=verify, whose verify takes no lock, so the takeover in the
   * database does not wait for the branch): the branch's INSERT is verified under the held lease,
   * the lease is taken over, then the transaction manager ends and prepares it. The prepare fails
   * with XA_RBROLLBACK, the branch is rolled back: no row, no prepared transaction, no session.
   */
  @Test
  void aBranchWhoseLeaseWasLostCannotBePreparedOrCommitted_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      String appName = "xa-" + d.events;
      try (AppProcess app = xaAcrossALoss(d, appName, null)) {
        assertOneLine(app, "XA-REFUSED 1", ROLLED_BACK);
        assertTrue(d.committed("L").isEmpty(), app.describe());
        assertNull(leftBehind(appName), app.describe());
      }
    }
  }

  /** Negative control: without the check at prepare the branch commits after the takeover. */
  @Test
  void withoutThePoisonCheckTheBranchCommitsAfterTheTakeover_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      try (AppProcess app = xaAcrossALoss(d, "xa-" + d.events, "xa-poison")) {
        assertBranchCommitted(app, d);
      }
    }
  }

  private static AppProcess xaAcrossALoss(LegacyDatabase d, String appName, String disable)
      throws Exception {
    AppProcess app =
        app(
            d.agentArgs(
                "mode=leader,lease="
                    + LEASE
                    + ",lease-duration=2s,fencing=verify,on-loss=refuse,instance=L"),
            "L",
            disable,
            "xa-loss",
            d.url,
            d.events,
            "L",
            appName);
    return losesTheLeaseBetween(
        app, d, "XA-OPEN 1", "the open branch", "XA-DONE", "the end of the branch");
  }

  /**
   * {@code app} loses its lease between the line {@code ready} and the line {@code done}: the lease
   * goes to another instance, the app says it no longer leads, and is told to go on. Closed if that
   * fails.
   */
  private static AppProcess losesTheLeaseBetween(
      AppProcess app,
      LegacyDatabase d,
      String ready,
      String readyWhat,
      String done,
      String doneWhat)
      throws Exception {
    try {
      app.awaitLine(l -> l.equals(ready), readyWhat);
      d.releaseAndHoldElsewhere(LEASE);
      app.awaitStderr(0, "this process no longer leads", "the loss of the lease");
      app.send("go");
      app.awaitLine(l -> l.equals(done), doneWhat);
      return app;
    } catch (Throwable t) {
      app.close();
      throw t;
    }
  }

  @Test
  void vendorInterfacesWorkOnTheLeader_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL);
        AppProcess app = vendor(d, "L", null)) {
      assertEquals(
          List.of("cast", "autocommit-call", "call", "reflective", "pooled-reflective"),
          lines(app, "VENDOR-OK").stream().map(l -> l.split(" ")[1]).toList(),
          app.describe());
      assertTrue(lines(app, "VENDOR-FAILED").isEmpty(), app.describe());
    }
  }

  @Test
  void vendorCallsOnAReplicaAreRefusedBeforeTheDriverRuns_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      d.holdLeaseElsewhere(LEASE);
      try (AppProcess app = vendor(d, "R", null)) {
        assertEquals(1, lines(app, "VENDOR-OK cast").size(), app.describe());
        List<String> failed = lines(app, "VENDOR-FAILED");
        assertEquals(
            List.of("autocommit-call", "call", "reflective", "pooled-reflective"),
            failed.stream().map(l -> l.split(" ")[1]).toList(),
            app.describe());
        assertTrue(
            failed.stream().allMatch(l -> l.contains("LeaseLostSQLException")), app.describe());
      }
    }
  }

  /**
   * A leader whose lease was lost (taken over in the database; on-loss=refuse keeps it running)
   * writes with COPY through {@code (PGConnection) c} in autocommit mode, where no transaction is
   * verified: refused before the driver runs, and no row.
   */
  @Test
  void vendorCopyInAutocommitUnderALostLeaseIsRefused_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      try (AppProcess app = copyAfterLoss(d, null)) {
        assertOneLine(app, "VENDOR-FAILED copy", "LeaseLostSQLException");
        assertOneLine(app, "VENDOR-FAILED copy", "no longer held by this process");
        assertTrue(d.committed("L").isEmpty(), app.describe());
      }
    }
  }

  /** Negative control: without the held check the COPY commits its row under the lost lease. */
  @Test
  void withoutTheHeldCheckTheCopyCommitsUnderALostLease_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL)) {
      try (AppProcess app = copyAfterLoss(d, "vendor-held-check")) {
        assertEquals(1, lines(app, "VENDOR-OK copy").size(), app.describe());
        assertEquals(Set.of(1), d.committed("L"), app.describe());
      }
    }
  }

  /**
   * The JVM options of a negative control that switches off the agent check {@code disable}. The
   * vendor checks have a second layer since lease-jdbc refuses the driver's own objects in
   * autocommit mode and verifies before other vendor objects: their controls switch that off too,
   * so each control still shows what its own check stops.
   */
  private static List<String> controlOptions(String disable) {
    boolean vendorCheck = disable.equals("vendor-held-check") || disable.equals("vendor-raw-check");
    return List.of(
        "-Dlease.agent.testing.disable=" + disable + (vendorCheck ? ",fence-unwrap-checks" : ""));
  }

  private static AppProcess copyAfterLoss(LegacyDatabase d, String disable) throws Exception {
    AppProcess app =
        app(
            d.agentArgs(
                "mode=leader,lease=" + LEASE + ",lease-duration=2s,on-loss=refuse,instance=L"),
            "L",
            disable,
            "vendor-copy",
            d.url,
            d.events,
            "L");
    return losesTheLeaseBetween(
        app, d, "VENDOR-READY", "the connection", "VENDOR-DONE", "the end of the COPY");
  }

  /**
   * MySQL Connector/J's JdbcConnection (against MariaDB): cast and call, leader and replica; its
   * clientPrepareStatement, which gives the driver's own statement (past the fence), is refused.
   */
  @Test
  void mysqlJdbcConnectionCastWorksAndItsCallsAreVerified_mysql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.MYSQL)) {
      try (AppProcess app = vendor(d, "L", null)) {
        assertEquals(
            List.of("mysql-cast", "mysql-call"),
            lines(app, "VENDOR-OK").stream().map(l -> l.split(" ")[1]).toList(),
            app.describe());
        assertOneLine(
            app, "VENDOR-FAILED mysql-raw-statement", "whose statements would run past the fence");
      }
      d.releaseAndHoldElsewhere(LEASE);
      try (AppProcess app = vendor(d, "R", null)) {
        assertEquals(1, lines(app, "VENDOR-OK mysql-cast").size(), app.describe());
        assertOneLine(app, "VENDOR-FAILED mysql-call", "LeaseLostSQLException");
      }
    }
  }

  /** Negative control: without the check the driver's own statement is handed out. */
  @Test
  void withoutTheRawCheckTheDriversOwnStatementIsHandedOut_mysql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.MYSQL);
        AppProcess app = vendor(d, "L", "vendor-raw-check")) {
      assertOneLine(app, "VENDOR-OK mysql-raw-statement", "com.mysql.cj.jdbc.");
    }
  }

  /** Negative control: without vendor faces the legacy cast fails again. */
  @Test
  void withoutVendorFacesTheCastFails_postgresql() throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(TestDatabase.POSTGRESQL);
        AppProcess app = vendor(d, "L", "vendor-faces")) {
      assertOneLine(app, "VENDOR-FAILED cast", "ClassCastException");
    }
  }

  /** The branch committed: its line, and its row (1 of instance L). */
  private static void assertBranchCommitted(AppProcess app, LegacyDatabase d)
      throws java.sql.SQLException {
    assertEquals(1, lines(app, "XA-COMMITTED 1").size(), app.describe());
    assertEquals(Set.of(1), d.committed("L"), "row 1 committed " + app.describe());
  }

  /**
   * {@code app} printed exactly one line that starts with {@code prefix}, and it holds {@code
   * says}.
   */
  private static String assertOneLine(AppProcess app, String prefix, String says) {
    List<String> found = lines(app, prefix);
    assertEquals(1, found.size(), app.describe());
    assertTrue(found.get(0).contains(says), app.describe());
    return found.get(0);
  }

  /** What a branch's refusal at prepare says first: rolled back (XA_RBROLLBACK). */
  private static final String ROLLED_BACK =
      "XA-REFUSED 1 " + javax.transaction.xa.XAException.XA_RBROLLBACK + " ";

  private static AppProcess vendor(LegacyDatabase d, String instance, String disable)
      throws InterruptedException {
    AppProcess app = app(d, instance, disable, "vendor", d.url);
    app.awaitLine(l -> l.equals("VENDOR-DONE"), "the end of the vendor calls");
    return app;
  }

  /**
   * MySQL/MariaDB under STRICT: XA PREPARE releases the branch's shared locks (MariaDB 10.6+), the
   * verify's lock on the lease row included, so the agent refuses {@code XAResource.prepare} of a
   * branch that ran under a lease: rolled back, XA_RBROLLBACK, no row, nothing left prepared.
   * MariaDB Connector/J returns a new XAResource from every getXAResource(): the branch is still
   * linked with its handles (through the resource's XA connection) and refused.
   */
  @OnMySqlFamily
  void aBranchUnderStrictIsRefusedAtPrepare(TestDatabase db) throws Exception {
    refusedAtPrepare(db, "two-phase", "one phase");
  }

  /**
   * A resource the agent cannot link with the handle its branch's statements ran on ({@code
   * legacy.SqlXaResource}: top-level, a new one per {@code getXAResource()}, as MariaDB Connector/J
   * 2.x's {@code MariaXaResource}): the agent has no record of the branch, so under STRICT, with
   * the leader lease on MySQL/MariaDB, its prepare fails closed: rolled back, XA_RBROLLBACK with
   * what to do, no row, nothing left prepared.
   */
  @OnMySqlFamily
  void aBranchOnAResourceTheAgentCannotLinkIsRefusedAtPrepare(TestDatabase db) throws Exception {
    refusedAtPrepare(
        db,
        "unlinked-two-phase",
        "cannot link this XAResource",
        "legacy.SqlXaResource",
        "one phase",
        "fencing=verify");
  }

  /**
   * One two-phase branch (PHASE of legacy.XaAndVendor): refused, with every one of {@code says}.
   */
  private static void refusedAtPrepare(TestDatabase db, String phase, String... says)
      throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess app = xaMysql(d, phase, null)) {
      String refused = assertOneLine(app, "XA-REFUSED 1", ROLLED_BACK);
      for (String said : says) {
        assertTrue(refused.contains(said), said + " in " + app.describe());
      }
      assertTrue(lines(app, "XA-PREPARED").isEmpty(), app.describe());
      assertTrue(d.committed("L").isEmpty(), app.describe());
      assertEquals(List.of(), preparedBranches(db, "L-1-"), app.describe());
    }
  }

  /** A one-phase commit commits with the verify's lock held: it passes under STRICT. */
  @Test
  void aOnePhaseCommitUnderStrictCommits_mysql() throws Exception {
    onePhaseCommits(TestDatabase.MYSQL, "one-phase");
  }

  /** A one-phase commit on the resource the agent cannot link holds the lock: it commits. */
  @Test
  void aOnePhaseCommitOnAResourceTheAgentCannotLinkCommits_mariadb() throws Exception {
    onePhaseCommits(TestDatabase.MARIADB, "unlinked-one-phase");
  }

  private static void onePhaseCommits(TestDatabase db, String phase) throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess app = xaMysql(d, phase, null)) {
      assertBranchCommitted(app, d);
    }
  }

  /**
   * Negative control: without the check the branch prepares, MariaDB releases the lease row's share
   * lock, a successor's takeover goes through while the branch is prepared (it would wait for the
   * lock otherwise), and the branch then commits after the takeover.
   */
  @Test
  void withoutThePrepareCheckABranchCommitsAfterATakeover_mysql() throws Exception {
    commitsAfterATakeoverWithout(TestDatabase.MYSQL, "two-phase", "xa-strict-prepare");
  }

  /**
   * Negative control (the agent before the fail-closed check): the branch the agent cannot link
   * prepares, MariaDB releases the lease row's share lock, a successor's takeover goes through, and
   * the branch commits after it.
   */
  @Test
  void withoutTheUnlinkedCheckABranchCommitsAfterATakeover_mariadb() throws Exception {
    commitsAfterATakeoverWithout(TestDatabase.MARIADB, "unlinked-two-phase", "xa-unlinked");
  }

  /** A prepared branch, the successor's claim, then the branch's commit: it commits. */
  private static void commitsAfterATakeoverWithout(TestDatabase db, String phase, String mechanism)
      throws Exception {
    try (LegacyDatabase d = new LegacyDatabase(db);
        AppProcess app = xaMysql(d, phase, mechanism)) {
      app.awaitLine(l -> l.equals("XA-PREPARED"), "the prepared branch");
      d.releaseAndHoldElsewhere(LEASE); // the successor's claim, committed
      app.send("go");
      app.awaitLine(l -> l.equals("XA-DONE"), "the end of the branch");
      assertBranchCommitted(app, d);
    }
  }

  private static AppProcess xaMysql(LegacyDatabase d, String phase, String disable)
      throws Exception {
    AppProcess app = app(d, "L", disable, "xa-mysql", d.url, d.events, "L", phase);
    if (disable == null) {
      try {
        app.awaitLine(l -> l.equals("XA-DONE"), "the end of the branch");
      } catch (Throwable t) {
        app.close();
        throw t;
      }
    }
    return app;
  }

  /** Prepared XA branches on the server whose gtrid starts with {@code prefix} (XA RECOVER). */
  private static List<String> preparedBranches(TestDatabase db, String prefix) throws SQLException {
    List<String> found = new java.util.ArrayList<>();
    try (Connection c = new UrlDataSource(db.url()).getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("XA RECOVER")) {
      while (rs.next()) {
        String data = rs.getString("data");
        if (data != null && data.startsWith(prefix)) {
          found.add(data);
        }
      }
    }
    return found;
  }

  private static List<String> lines(AppProcess app, String prefix) {
    return app.lines().stream().filter(l -> l.startsWith(prefix)).toList();
  }

  /**
   * What an XA run must not leave: sessions of the application (every XAConnection is closed after
   * its transaction; the application is still running) or prepared transactions of our format id.
   */
  private static String leftBehind(String appName) throws SQLException {
    List<String> left = new ArrayList<>();
    try (Connection c = PG.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?")) {
      ps.setString(1, appName);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (rs.getInt(1) > 0) {
          left.add(rs.getInt(1) + " open sessions");
        }
      }
    }
    int prepared = preparedTransactions().size();
    if (prepared > 0) {
      left.add(prepared + " prepared transactions");
    }
    return left.isEmpty() ? null : String.join(", ", left);
  }

  private static List<String> preparedTransactions() throws SQLException {
    List<String> gids = new ArrayList<>();
    try (Connection c = PG.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"
                    + " AND gid LIKE '"
                    + GID_PREFIX
                    + "%'")) {
      while (rs.next()) {
        gids.add(rs.getString(1));
      }
    }
    return gids;
  }

  /** A prepared transaction left by a failed run would hold its locks for ever: roll it back. */
  @AfterAll
  static void rollBackPreparedLeftovers() throws SQLException {
    for (String gid : preparedTransactions()) {
      try (Connection c = PG.getConnection();
          Statement s = c.createStatement()) {
        s.execute("ROLLBACK PREPARED '" + gid + "'");
      }
    }
  }
}
