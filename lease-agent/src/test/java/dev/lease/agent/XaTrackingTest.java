package dev.lease.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;
import legacy.QuietXaConnection;
import legacy.QuietXaResource;
import legacy.SimpleXid;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link XaTracking}'s record of the leases a branch ran under, called as the XA advice calls it,
 * with real leases (PostgreSQL; MariaDB for STRICT's MySQL-family rule) and stub XA resources: one
 * that is its own XA connection (as pgjdbc's), whose handle is a real connection, and one the agent
 * cannot link. The database behaviour of XA is not involved: every refusal happens before the
 * driver's prepare or commit ({@code XaAndVendorIT} runs them on real XA branches).
 */
class XaTrackingTest {

  private static final DataSource PG = new UrlDataSource(TestDatabase.POSTGRESQL.url());

  private String table;
  private LeaseManager manager;
  private Connection physical;

  @BeforeEach
  void leases() throws Exception {
    XaTracking.forgetForTesting();
    XaTracking.fencing(false);
    table = TestDatabase.uniqueTable("agent_xa_tracking");
    manager = LeaseManager.builder(PG).table(table).createTableIfMissing().build();
    physical = PG.getConnection();
  }

  @AfterEach
  void close() throws Exception {
    XaTracking.forgetForTesting();
    XaTracking.fencing(true);
    physical.close();
    manager.close();
    TestDatabase.dropQuietly(PG, table);
  }

  /**
   * A branch's first segment runs under lease a, its joined segment ({@code TMJOIN}) under lease b;
   * a is then released. The branch must not prepare: b's record did not replace a's. Control: a
   * branch that ran under b alone prepares.
   */
  @Test
  void aJoinedBranchKeepsTheLeaseOfItsFirstSegment_postgresql() throws Exception {
    Lease a = manager.tryClaim("xa-join-a").orElseThrow();
    Lease b = manager.tryClaim("xa-join-b").orElseThrow();
    StubXa xa = new StubXa();
    Connection handle = XaTracking.handle(xa, physical);
    Xid joined = xid("joined");
    segment(xa, handle, joined, a);
    segment(xa, handle, joined, b); // TMJOIN: start again on the same Xid
    Xid alone = xid("alone");
    segment(xa, handle, alone, b);
    a.close();

    XAException refused =
        assertThrows(XAException.class, () -> XaTracking.beforePrepare(xa, joined, true));
    assertEquals(XAException.XA_RBROLLBACK, refused.errorCode);
    assertTrue(refused.getMessage().contains("lease xa-join-a"), refused.getMessage());
    assertEquals(List.of(joined), xa.rolledBack);

    XaTracking.beforePrepare(xa, alone, true); // control: b is held
    XaTracking.finished(xa, alone, true);
  }

  /**
   * More than {@link XaTracking#MAX_BRANCHES} ended branches are left unfinished: the oldest, run
   * under a lease that is then released, is dropped from the record. Its one-phase commit is still
   * refused (checked against the leases of the dropped branches), with a message that says why.
   * Control: a branch still recorded, with no lease, commits.
   */
  @Test
  void aBranchDroppedPastTheBoundIsStillCheckedAgainstItsLease_postgresql() throws Exception {
    Lease a = manager.tryClaim("xa-dropped-a").orElseThrow();
    StubXa xa = new StubXa();
    Connection handle = XaTracking.handle(xa, physical);
    Xid oldest = xid("oldest");
    segment(xa, handle, oldest, a);
    List<Xid> unfinished = new ArrayList<>();
    for (int i = 0; i < XaTracking.MAX_BRANCHES; i++) {
      Xid x = xid("unfinished-" + i);
      segment(xa, handle, x, null);
      unfinished.add(x);
    }
    a.close();

    XAException refused =
        assertThrows(XAException.class, () -> XaTracking.beforePrepare(xa, oldest, false));
    assertEquals(XAException.XA_RBROLLBACK, refused.errorCode);
    assertTrue(
        refused.getMessage().contains("not recorded")
            && refused.getMessage().contains("lease xa-dropped-a"),
        refused.getMessage());

    Xid last = unfinished.get(unfinished.size() - 1);
    XaTracking.beforePrepare(xa, last, false); // control: recorded, no lease
    for (Xid x : unfinished) {
      XaTracking.finished(xa, x, true);
    }
  }

  /**
   * Under STRICT with a lease on MariaDB bound: a branch the agent saw end on a resource it links,
   * with no statement under a lease, prepares in two phases (recorded as unfenced); a branch on a
   * resource it cannot link (no record) is refused at a two-phase prepare with what to do, and
   * commits in one phase. Control: with no lease in play the unlinked branch prepares.
   */
  @Test
  void aBranchOnAResourceTheAgentCannotLinkIsRefusedOnlyWhereItMayBeFenced_mariadb()
      throws Exception {
    DataSource maria = new UrlDataSource(TestDatabase.MARIADB.url());
    String mariaTable = TestDatabase.uniqueTable("agent_xa_tracking");
    XaTracking.fencing(true);
    try (LeaseManager m =
        LeaseManager.builder(maria).table(mariaTable).createTableIfMissing().build()) {
      Lease lease = m.tryClaim("xa-unlinked").orElseThrow();
      StubXa linked = new StubXa();
      Connection handle = XaTracking.handle(linked, physical);
      Xid seen = xid("seen");
      segment(linked, handle, seen, null);
      UnlinkedResource unlinked = new UnlinkedResource();
      Xid twoPhase = xid("two-phase");
      Xid onePhase = xid("one-phase");
      Xid noLease = xid("no-lease");
      for (Xid x : List.of(twoPhase, onePhase, noLease)) {
        XaTracking.started(unlinked);
        XaTracking.ended(unlinked, x);
      }

      try (LeaseContext.Scope bound = LeaseContext.bind(lease)) {
        XaTracking.beforePrepare(linked, seen, true);
        XAException refused =
            assertThrows(
                XAException.class, () -> XaTracking.beforePrepare(unlinked, twoPhase, true));
        assertEquals(XAException.XA_RBROLLBACK, refused.errorCode);
        assertTrue(
            refused.getMessage().contains("cannot link this XAResource")
                && refused.getMessage().contains(UnlinkedResource.class.getName())
                && refused.getMessage().contains("one phase")
                && refused.getMessage().contains("fencing=verify")
                && refused.getMessage().contains("report the driver"),
            refused.getMessage());
        XaTracking.beforePrepare(unlinked, onePhase, false);
      }
      try (LeaseContext.Scope none = LeaseContext.unbind()) {
        XaTracking.beforePrepare(unlinked, noLease, true); // control: no lease in play
      }
    } finally {
      TestDatabase.dropQuietly(maria, mariaTable);
    }
  }

  /**
   * Under STRICT, a fenced XA handle of a resource the agent cannot link ran a statement under a
   * MariaDB lease outside any branch the agent saw (as a branch on such a resource does), then one
   * under a PostgreSQL lease. A branch on an unlinked resource is refused at a two-phase prepare
   * though the PostgreSQL lease is the one bound then: neither the later PostgreSQL statement nor
   * the bound PostgreSQL lease hides the MariaDB lease in play (the first version kept one last
   * lease of any database and checked only the bound one; this test failed on it). Control: a
   * message broker's resource is exempt.
   */
  @Test
  void anotherDatabasesLeaseDoesNotHideAMariadbLeaseInPlay_mariadb_postgresql() throws Exception {
    DataSource maria = new UrlDataSource(TestDatabase.MARIADB.url());
    String mariaTable = TestDatabase.uniqueTable("agent_xa_tracking");
    XaTracking.fencing(true);
    try (LeaseManager m =
        LeaseManager.builder(maria).table(mariaTable).createTableIfMissing().build()) {
      Lease mariaLease = m.tryClaim("xa-mixed").orElseThrow();
      Lease pgLease = manager.tryClaim("xa-mixed").orElseThrow();
      Connection handle = XaTracking.handle(new UnlinkedXa(), physical);
      try (LeaseContext.Scope bound = LeaseContext.bind(mariaLease)) {
        query(handle); // no branch seen on this handle's resource
      }
      try (LeaseContext.Scope bound = LeaseContext.bind(pgLease)) {
        query(handle);
      }
      UnlinkedResource unlinked = new UnlinkedResource();
      Xid x = xid("mixed");
      XaTracking.started(unlinked);
      XaTracking.ended(unlinked, x);
      try (LeaseContext.Scope bound = LeaseContext.bind(pgLease)) {
        XAException refused =
            assertThrows(XAException.class, () -> XaTracking.beforePrepare(unlinked, x, true));
        assertTrue(refused.getMessage().contains("xa-mixed"), refused.getMessage());
        // control: a broker's branch beside it is not a MySQL/MariaDB branch
        XaTracking.beforePrepare(new org.apache.activemq.FakeBrokerResource(), xid("jms"), true);
      }
    } finally {
      TestDatabase.dropQuietly(maria, mariaTable);
    }
  }

  /**
   * A handle of a resource the agent cannot link (as MariaDB Connector/J 2.x's) that ran statements
   * under a MariaDB lease is marked: while it is, an unlinked branch's two-phase prepare is refused
   * under STRICT even with no lease bound. A local transaction's commit clears the mark (the
   * session is shown to be in no branch: the first version never cleared it, and every later
   * unlinked prepare of the process was refused). A handle closed inside a branch started as SQL
   * (the driver's logical close: the branch goes on) keeps its mark, and the branch's prepare is
   * refused, also when the only call on the handle under the lease read its state. Control:
   * clearing on a successful close without asking the session lets that branch prepare.
   */
  @Test
  void aMarkIsClearedOnlyWhenTheSessionIsInNoBranch_mariadb() throws Exception {
    marksClearedOutsideBranches(TestDatabase.MARIADB);
  }

  /** The same through MySQL Connector/J. */
  @Test
  void aMarkIsClearedOnlyWhenTheSessionIsInNoBranch_mysql() throws Exception {
    marksClearedOutsideBranches(TestDatabase.MYSQL);
  }

  private void marksClearedOutsideBranches(TestDatabase db) throws Exception {
    DataSource ds = new UrlDataSource(db.url());
    String mysqlTable = TestDatabase.uniqueTable("agent_xa_marks");
    XaTracking.fencing(true);
    try (LeaseManager m =
            LeaseManager.builder(ds).table(mysqlTable).createTableIfMissing().build();
        Connection session = ds.getConnection()) {
      Lease lease = m.tryClaim("xa-marks").orElseThrow();

      // a local transaction under the lease marks the handle; its commit clears the mark
      Connection local = XaTracking.handle(new UnlinkedXa(), logical(session));
      try (LeaseContext.Scope bound = LeaseContext.bind(lease)) {
        local.setAutoCommit(false);
        query(local);
      }
      assertRefused(unlinkedPrepare("while-marked"));
      try (LeaseContext.Scope bound = LeaseContext.bind(lease)) {
        local.commit();
        local.setAutoCommit(true);
      }
      assertEquals(null, unlinkedPrepare("after-commit"), "the commit cleared the mark");
      local.close();

      // a branch started as SQL on the session, the handle closed inside it: the mark stays
      branchClosedInside(session, "kept", statementUnder(lease));
      assertRefused(unlinkedPrepare("branch-kept"));
      XaTracking.forgetForTesting();

      // a statement made before the lease was bound runs under it on the driver's own statement
      // (as a verify carried in its text does): the handle sees only the fence reading its state,
      // and that marks it (a first version marked only calls that make statements: it passed)
      branchClosedInside(
          session,
          "early",
          handle -> {
            try (Statement early = handle.createStatement()) {
              try (LeaseContext.Scope bound = LeaseContext.bind(lease)) {
                handle.isReadOnly();
                early.executeQuery("SELECT 1").close();
              }
            }
          });
      assertRefused(unlinkedPrepare("branch-early"));
      XaTracking.forgetForTesting();

      // control: a clearing that trusts the close lets the branch prepare
      XaTracking.rulesForTesting(
          new AgentRules() {
            @Override
            public boolean probesSessionBeforeClearingXaMark() {
              return false;
            }
          });
      try {
        branchClosedInside(session, "control", statementUnder(lease));
        assertEquals(null, unlinkedPrepare("branch-control"), "the weakened clearing let it pass");
      } finally {
        XaTracking.rulesForTesting(null);
      }
    } finally {
      TestDatabase.dropQuietly(ds, mysqlTable);
    }
  }

  /** What a test does with an unlinked handle inside a branch. */
  @FunctionalInterface
  interface InBranch {
    void run(Connection handle) throws Exception;
  }

  /** A statement under {@code lease} through the handle: a fenced transaction's first statement. */
  private static InBranch statementUnder(Lease lease) {
    return handle -> {
      try (LeaseContext.Scope bound = LeaseContext.bind(lease)) {
        query(handle);
      }
    };
  }

  /**
   * {@code XA START} on {@code session}, {@code body} with an unlinked handle on it, the handle's
   * (logical) close, then the branch rolled back on the session.
   */
  private static void branchClosedInside(Connection session, String id, InBranch body)
      throws Exception {
    String gtrid = "'xa-marks-" + id + "-" + System.nanoTime() + "'";
    try (Statement s = session.createStatement()) {
      s.execute("XA START " + gtrid);
      try {
        Connection handle = XaTracking.handle(new UnlinkedXa(), logical(session));
        body.run(handle);
        handle.close();
      } finally {
        s.execute("XA END " + gtrid);
        s.execute("XA ROLLBACK " + gtrid);
      }
    }
  }

  /** The refusal of an unlinked branch's two-phase prepare with no lease bound (null: none). */
  private static String unlinkedPrepare(String id) throws Exception {
    UnlinkedResource unlinked = new UnlinkedResource();
    Xid x = xid(id);
    XaTracking.started(unlinked);
    XaTracking.ended(unlinked, x);
    try (LeaseContext.Scope none = LeaseContext.unbind()) {
      XaTracking.beforePrepare(unlinked, x, true);
      XaTracking.finished(unlinked, x, true);
      return null;
    } catch (XAException e) {
      return e.getMessage();
    }
  }

  private static void assertRefused(String refusal) {
    assertTrue(
        refusal != null && refusal.contains("cannot link this XAResource"),
        "expected the unlinked prepare refused, was " + refusal);
  }

  private static void query(Connection c) throws Exception {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1")) {
      rs.next();
    }
  }

  /**
   * {@code physical} behind a driver's logical handle: closing it leaves the session (and a branch
   * on it) open, as MariaDB Connector/J 2.x's XA handle does.
   */
  private static Connection logical(Connection physical) {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (method.getName().equals("close") && (args == null || args.length == 0)) {
                return null;
              }
              try {
                return method.invoke(physical, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  /** start, a call on the handle under {@code lease} (none: null), end. */
  private static void segment(StubXa xa, Connection handle, Xid xid, Lease lease) throws Exception {
    XaTracking.started(xa);
    if (lease == null) {
      try (LeaseContext.Scope unbound = LeaseContext.unbind()) {
        handle.getAutoCommit();
      }
    } else {
      try (LeaseContext.Scope bound = LeaseContext.bind(lease)) {
        handle.getAutoCommit();
      }
    }
    XaTracking.ended(xa, xid);
  }

  private static Xid xid(String id) {
    return new SimpleXid(id + "-" + System.nanoTime());
  }

  /** A resource of a shape the agent cannot link: not an XA connection, no {@code this$0}. */
  static final class UnlinkedResource implements QuietXaResource {}

  /** An XA connection whose every {@code getXAResource()} is a new {@link UnlinkedResource}. */
  private static final class UnlinkedXa implements QuietXaConnection {
    @Override
    public XAResource getXAResource() {
      return new UnlinkedResource();
    }

    @Override
    public Connection getConnection() {
      throw new UnsupportedOperationException();
    }
  }

  /** An XA connection that is its own resource; records the branches rolled back on it. */
  private static final class StubXa implements QuietXaConnection, QuietXaResource {
    final List<Xid> rolledBack = new ArrayList<>();

    @Override
    public XAResource getXAResource() {
      return this;
    }

    @Override
    public Connection getConnection() {
      throw new UnsupportedOperationException();
    }

    @Override
    public void rollback(Xid xid) {
      rolledBack.add(xid);
    }
  }
}
