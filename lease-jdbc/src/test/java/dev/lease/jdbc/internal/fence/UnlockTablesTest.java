package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 25 item 6, the part that keeps pools healthy: {@code UNLOCK TABLES} under a lease is never
 * refused (MariaDB, both drivers), whether the lease is held or taken over, in autocommit mode and
 * after a refused transaction, so the pooled connection never goes back with its tables locked. The
 * negative control leaves out the UNLOCK and the next borrower finds the tables locked.
 */
class UnlockTablesTest {

  static Stream<Object[]> cases() {
    return TestDatabase.all()
        .filter(TestDatabase::isMySqlFamily)
        .flatMap(db -> Stream.of(new Object[] {db, false}, new Object[] {db, true}));
  }

  @ParameterizedTest(name = "{0} takenOver={1}")
  @MethodSource("cases")
  void unlockTablesIsNeverRefusedUnderALease(TestDatabase db, boolean takenOver) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("lock");
      try (Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement()) {
        s.execute("LOCK TABLES " + f.data + " WRITE"); // no lease bound yet
        if (takenOver) {
          f.takeOver(lease);
        }
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          try {
            s.executeUpdate("UPDATE " + f.data + " SET note = 'x'");
          } catch (SQLException e) {
            // the verify cannot read the lease table under LOCK TABLES (item 6, still refused)
          }
          s.execute("UNLOCK TABLES");
        }
      }
      assertEquals("unlocked", tablesOfThePooledConnection(f));
    }
  }

  /** Negative control: without the UNLOCK the next borrower gets the tables locked. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.lease.jdbc.internal.fence.AbandonRefusedTransactionTest#mysqlFamily")
  void negativeControlWithoutUnlockThePoolHandsOutLockedTables(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      try (Connection c = f.pool.getConnection();
          Statement s = c.createStatement()) {
        s.execute("LOCK TABLES " + f.data + " WRITE");
      }
      assertEquals("locked", tablesOfThePooledConnection(f));
      for (int i = 0; i < 2; i++) {
        try (Connection c = f.pool.getConnection();
            Statement s = c.createStatement()) {
          s.execute("UNLOCK TABLES");
        }
      }
    }
  }

  /** Whether both of the pool's physical connections can read a table they did not lock. */
  private static String tablesOfThePooledConnection(Fixture f) throws SQLException {
    try (Connection a = f.pool.getConnection();
        Connection b = f.pool.getConnection()) {
      for (Connection c : new Connection[] {a, b}) {
        try (Statement s = c.createStatement()) {
          s.executeQuery("SELECT COUNT(*) FROM " + f.leaseTable).close();
        } catch (SQLException e) {
          return e.getMessage().contains("not locked") ? "locked" : e.getMessage();
        }
      }
      return "unlocked";
    }
  }
}
