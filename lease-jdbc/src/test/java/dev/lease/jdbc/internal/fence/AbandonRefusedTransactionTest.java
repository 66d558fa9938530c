package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 25 item 8: a refused transaction is always abandonable. On MariaDB an XA transaction begun
 * as SQL and refused by the verify can be ended with {@code XA END} + {@code XA ROLLBACK}, with
 * {@code rollback()}, or by closing the pooled connection, and the physical connection does not go
 * back to the pool in XA ACTIVE (MariaDB refuses a plain ROLLBACK there: XAE07). The negative
 * control ends the refused branch the way the fence did before (a plain ROLLBACK) and the next
 * borrower finds the branch still ACTIVE.
 */
class AbandonRefusedTransactionTest {

  static Stream<TestDatabase> mysqlFamily() {
    return TestDatabase.all().filter(TestDatabase::isMySqlFamily);
  }

  enum End {
    XA_END_AND_XA_ROLLBACK,
    ROLLBACK_CALL,
    CLOSE
  }

  static Stream<Object[]> cases() {
    return mysqlFamily().flatMap(db -> Stream.of(End.values()).map(e -> new Object[] {db, e}));
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("cases")
  void aRefusedXaTransactionCanBeAbandoned(TestDatabase db, End end) throws Exception {
    try (Fixture f = new Fixture(db, 1)) {
      Lease lease = f.holding("xa");
      f.takeOver(lease);
      FencedDataSource ds = f.fenced(f.options().build());
      Connection c = ds.getConnection();
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        Statement s = c.createStatement();
        s.execute("XA START 'lf_xa1'");
        LeaseLostSQLException refused =
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, 1));
        assertEquals(LeaseLostSQLException.REFUSED, refused.getSQLState());
        // XA PREPARE would keep the stale write for a later XA COMMIT: still refused
        assertThrows(LeaseLostSQLException.class, () -> s.execute("XA PREPARE 'lf_xa1'"));
        switch (end) {
          case XA_END_AND_XA_ROLLBACK:
            s.execute("XA END 'lf_xa1'");
            s.execute("XA ROLLBACK 'lf_xa1'");
            // the poison went with the branch: the next statement is a new transaction, refused
            // by its own verify (REFUSED), not by the old poison
            assertEquals(
                LeaseLostSQLException.REFUSED,
                assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 2, 2)).getSQLState());
            c.close();
            break;
          case ROLLBACK_CALL:
            c.rollback();
            c.close();
            break;
          default:
            c.close();
        }
      }
      assertEquals(0, f.count(null));
      assertEquals("no XA branch open", xaStateOfThePooledConnection(f));
    }
  }

  /** Negative control: a plain ROLLBACK, what the fence sent before, leaves the branch ACTIVE. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("mysqlFamily")
  void negativeControlAPlainRollbackLeavesTheBranchActive(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 1)) {
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("XA START 'lf_xa1'");
        f.insert(c, 1, 1);
        assertThrows(SQLException.class, () -> s.execute("ROLLBACK"));
      }
      assertEquals("XA ACTIVE", xaStateOfThePooledConnection(f));
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("XA END 'lf_xa1'");
        s.execute("XA ROLLBACK 'lf_xa1'");
      }
    }
  }

  /** Whether the pool's only physical connection can begin an XA branch (none open) or not. */
  private static String xaStateOfThePooledConnection(Fixture f) throws SQLException {
    try (Connection c = f.pool.getConnection();
        Statement s = c.createStatement()) {
      try {
        s.execute("XA START 'lf_probe'");
      } catch (SQLException e) {
        return e.getMessage().contains("ACTIVE") ? "XA ACTIVE" : e.getMessage();
      }
      s.execute("XA END 'lf_probe'");
      s.execute("XA ROLLBACK 'lf_probe'");
      return "no XA branch open";
    }
  }
}
