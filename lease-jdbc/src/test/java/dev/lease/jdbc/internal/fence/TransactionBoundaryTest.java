package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.jdbc.AutoCommitPolicy;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.ReadOnlyPolicy;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * Where and how often the verify runs, on every database: lazily at the first statement of a
 * transaction, exactly once, reset at every boundary (API calls and SQL), and what a refusal does.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TransactionBoundaryTest {

  private final java.util.Map<TestDatabase, Fixture> fixtures =
      new java.util.EnumMap<>(TestDatabase.class);
  private final java.util.Map<TestDatabase, LeaseManager> managers =
      new java.util.EnumMap<>(TestDatabase.class);
  private int ids;

  @BeforeAll
  void setUp() throws SQLException {
    for (TestDatabase db : TestDatabase.values()) {
      Fixture f = new Fixture(db, 4);
      fixtures.put(db, f);
      managers.put(db, f.manager("holder", LeaseTimings.DEFAULTS));
    }
  }

  @AfterAll
  void tearDown() {
    fixtures.values().forEach(Fixture::close);
  }

  private Fixture fixture(TestDatabase db) {
    Fixture f = fixtures.get(db);
    f.verified.set(0);
    f.refused.set(0);
    f.poisoned.set(0);
    return f;
  }

  private Lease claim(TestDatabase db) {
    return managers.get(db).tryClaim("l" + (++ids)).orElseThrow();
  }

  @OnEveryDatabase
  void verifyRunsAtTheFirstStatementNotAtSetAutoCommit(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease lease = claim(db);
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      assertEquals(0, f.verified.get(), "setAutoCommit(false) must not verify");
      f.insert(c, ++ids, lease.term());
      assertEquals(1, f.verified.get());
      f.insert(c, ++ids, lease.term());
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT 1")) {
        rs.next();
      }
      assertEquals(1, f.verified.get(), "exactly once per transaction");
      c.commit();
      f.insert(c, ++ids, lease.term());
      assertEquals(2, f.verified.get(), "commit resets");
      c.rollback();
      f.insert(c, ++ids, lease.term());
      assertEquals(3, f.verified.get(), "rollback resets");
      c.setAutoCommit(false); // redundant: changes nothing
      f.insert(c, ++ids, lease.term());
      assertEquals(3, f.verified.get(), "a redundant setAutoCommit(false) does not reset");
      c.setAutoCommit(true); // commits
      c.setAutoCommit(false);
      f.insert(c, ++ids, lease.term());
      assertEquals(4, f.verified.get(), "setAutoCommit(true) resets");
      c.commit();
    }
  }

  @OnEveryDatabase
  void savepointsVerifyFirstAndSavepointRollbackVerifiesAgain(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease lease = claim(db);
    int kept = ++ids;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      Savepoint sp = c.setSavepoint();
      assertEquals(1, f.verified.get(), "setSavepoint verifies before the driver's own SQL");
      f.insert(c, ++ids, lease.term());
      c.rollback(sp);
      assertEquals(1, f.verified.get(), "rollback(savepoint) itself runs no verify");
      f.insert(c, kept, lease.term());
      assertEquals(2, f.verified.get(), "the statement after a savepoint rollback verifies again");
      f.insert(c, ++ids, lease.term());
      assertEquals(2, f.verified.get(), "once");
      c.commit();
    }
    assertEquals(1, f.count("id = " + kept), "still one transaction: committed whole");
  }

  @OnEveryDatabase
  void transactionControlWrittenAsSqlIsSeen(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease lease = claim(db);
    String begin = db.isMySqlFamily() ? "START TRANSACTION" : "BEGIN";
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      assertTrue(c.getAutoCommit());
      s.execute(" /* explicit */ " + begin);
      assertEquals(0, f.verified.get());
      int id = ++ids;
      f.insert(c, id, lease.term());
      f.insert(c, ++ids, lease.term());
      assertEquals(1, f.verified.get(), "statements after BEGIN run in one verified transaction");
      s.execute("ROLLBACK");
      assertEquals(0, f.count("id = " + id), "the explicit transaction was rolled back as one");
      s.execute(begin);
      f.insert(c, ++ids, lease.term());
      s.execute("-- done\nCOMMIT");
      assertEquals(2, f.verified.get());
      f.insert(c, ++ids, lease.term()); // autocommit again: its own verified transaction
      assertEquals(3, f.verified.get());
    }
  }

  @OnEveryDatabase
  void aRefusedTransactionIsPoisonedUntilRollback(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease lease = claim(db);
    f.takeOver(lease);
    int id = ++ids;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      LeaseLostSQLException refused =
          assertThrows(LeaseLostSQLException.class, () -> f.insert(c, id, lease.term()));
      assertEquals(LeaseLostSQLException.REFUSED, refused.getSQLState());
      assertEquals(1, f.refused.get());
      LeaseLostSQLException again =
          assertThrows(LeaseLostSQLException.class, () -> f.insert(c, id, lease.term()));
      assertEquals(LeaseLostSQLException.POISONED, again.getSQLState());
      assertEquals(
          LeaseLostSQLException.POISONED,
          assertThrows(LeaseLostSQLException.class, c::commit).getSQLState());
      assertEquals(
          LeaseLostSQLException.POISONED,
          assertThrows(LeaseLostSQLException.class, c::setSavepoint).getSQLState());
      c.rollback(); // never fails because of the lease
      try (LeaseContext.Scope none = LeaseContext.unbind()) {
        f.insert(c, ++ids, 0); // no lease bound: passes through
        c.commit();
      }
    }
    assertEquals(0, f.count("id = " + id), "nothing of the refused transaction committed");
  }

  @OnEveryDatabase
  void setAutoCommitTrueRollsBackAPoisonedTransactionAndSaysSo(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease lease = claim(db);
    int id = ++ids;
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      f.insert(c, id, 0); // before the lease is bound: not fenced, not verified
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        c.rollback();
        f.takeOver(lease);
        assertThrows(LeaseLostSQLException.class, () -> f.insert(c, id, lease.term()));
        assertEquals(
            LeaseLostSQLException.POISONED,
            assertThrows(LeaseLostSQLException.class, () -> c.setAutoCommit(true)).getSQLState());
        assertTrue(c.getAutoCommit());
      }
    }
    assertEquals(0, f.count("id = " + id));
  }

  @OnEveryDatabase
  void autocommitStatementsRunAsTheirOwnVerifiedTransactions(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease lease = claim(db);
    int id = ++ids;
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection()) {
      f.insert(c, id, lease.term());
      f.insert(c, ++ids, lease.term());
      assertEquals(2, f.verified.get());
      assertTrue(c.getAutoCommit());
      assertEquals(1, f.count("id = " + id), "committed");
      f.takeOver(lease);
      int refusedId = ++ids;
      assertEquals(
          LeaseLostSQLException.REFUSED,
          assertThrows(LeaseLostSQLException.class, () -> f.insert(c, refusedId, lease.term()))
              .getSQLState());
      assertTrue(c.getAutoCommit());
      assertEquals(0, f.count("id = " + refusedId), "the refused statement never ran");
      try (LeaseContext.Scope none = LeaseContext.unbind()) {
        f.insert(c, ++ids, 0); // the connection is clean afterwards
      }
    }
  }

  @OnEveryDatabase
  void autocommitPoliciesVerifyOnlyAndRefuse(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    Lease lease = claim(db);
    try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
      try (Connection c =
          f.fenced(f.options().autoCommit(AutoCommitPolicy.VERIFY_ONLY).build()).getConnection()) {
        f.insert(c, ++ids, lease.term());
        f.insert(c, ++ids, lease.term());
        assertEquals(2, f.verified.get());
      }
      try (Connection c =
          f.fenced(f.options().autoCommit(AutoCommitPolicy.REFUSE).build()).getConnection()) {
        int id = ++ids;
        assertEquals(
            LeaseLostSQLException.AUTOCOMMIT_REFUSED,
            assertThrows(SQLException.class, () -> f.insert(c, id, lease.term())).getSQLState());
        c.setAutoCommit(false);
        f.insert(c, id, lease.term());
        c.commit();
      }
    }
  }

  @OnEveryDatabase
  void readOnlyTransactionsCanSkipTheVerify(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    Lease lease = claim(db);
    javax.sql.DataSource target = f.pool;
    if (db.isSqlite()) {
      // sqlite-jdbc changes read-only only with explicit_readonly (then through PRAGMA query_only)
      org.sqlite.SQLiteConfig config = new org.sqlite.SQLiteConfig();
      config.setExplicitReadOnly(true);
      org.sqlite.SQLiteDataSource sqlite = new org.sqlite.SQLiteDataSource(config);
      sqlite.setUrl(f.pool.getDataSource().unwrap(org.sqlite.SQLiteDataSource.class).getUrl());
      target = sqlite;
    }
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c =
            FencedDataSource.wrap(target, f.options().readOnly(ReadOnlyPolicy.SKIP).build())
                .getConnection()) {
      c.setReadOnly(true);
      c.setAutoCommit(false);
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT 1")) {
        rs.next();
      }
      // MySQL/MariaDB: no server variable tells whether the transaction can write (review S1)
      int skipped = db.isMySqlFamily() ? 1 : 0;
      assertEquals(skipped, f.verified.get());
      c.commit();
      c.setReadOnly(false);
      f.insert(c, ++ids, lease.term());
      assertEquals(skipped + 1, f.verified.get());
      c.commit();
    }
  }

  @OnEveryDatabase
  void aDifferentLeaseInsideAVerifiedTransactionFails(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease first = claim(db);
    Lease second = claim(db);
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      try (LeaseContext.Scope scope = LeaseContext.bind(first)) {
        f.insert(c, ++ids, first.term());
      }
      try (LeaseContext.Scope scope = LeaseContext.bind(second)) {
        assertEquals(
            LeaseLostSQLException.LEASE_CHANGED,
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, ++ids, second.term()))
                .getSQLState());
      }
      c.rollback();
    }
  }

  @OnEveryDatabase
  void withNoLeaseBoundNothingIsVerified(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    try (Connection c = f.fenced(f.options().build()).getConnection()) {
      c.setAutoCommit(false);
      f.insert(c, ++ids, 0);
      c.commit();
      c.setAutoCommit(true);
      f.insert(c, ++ids, 0);
    }
    assertEquals(0, f.verified.get());
  }

  @OnEveryDatabase
  void statementsPreparedBeforeTheLeaseWasBoundAndBatchesAreFenced(TestDatabase db)
      throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease lease = claim(db);
    try (Connection c = ds.getConnection();
        java.sql.PreparedStatement ps =
            c.prepareStatement("INSERT INTO " + f.data + " (id, term) VALUES (?, ?)")) {
      c.setAutoCommit(false);
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        for (int i = 0; i < 3; i++) {
          ps.setInt(1, ++ids);
          ps.setLong(2, lease.term());
          ps.addBatch();
        }
        assertEquals(0, f.verified.get(), "addBatch does not verify");
        ps.executeBatch();
        assertEquals(1, f.verified.get(), "executeBatch does, once");
        c.commit();
        f.takeOver(lease);
        ps.setInt(1, ++ids);
        ps.setLong(2, lease.term());
        ps.addBatch();
        assertThrows(LeaseLostSQLException.class, ps::executeBatch);
        c.rollback();
      }
    }
  }

  @OnEveryDatabase
  void anAutocommitQueryUnderALeaseStillReturnsItsRows(TestDatabase db) throws Exception {
    Fixture f = fixture(db);
    FencedDataSource ds = f.fenced(f.options().build());
    Lease lease = claim(db);
    try (LeaseContext.Scope scope = LeaseContext.bind(lease);
        Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3")) {
      int sum = 0;
      while (rs.next()) {
        sum += rs.getInt(1);
      }
      assertEquals(6, sum, "the result set outlives the verified transaction it ran in");
      assertEquals(1, f.verified.get());
      assertTrue(c.getAutoCommit());
    }
  }
}
