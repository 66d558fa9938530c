package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 25 item 6: {@code LOCK TABLES t WRITE; UPDATE t ...; UNLOCK TABLES} under a lease (MariaDB,
 * both drivers). A list that names the lease table runs, in autocommit mode and in a transaction,
 * and the update commits; a list that leaves it out is refused before it is sent (LF005, saying
 * what to add), so no table is locked and nothing is half-applied. Negative control: without the
 * check the LOCK TABLES runs and the next statement fails with the server's "was not locked" while
 * the tables stay locked.
 */
class LockTablesTest {

  static Stream<Object[]> cases() {
    return TestDatabase.all()
        .filter(TestDatabase::isMySqlFamily)
        .flatMap(db -> Stream.of(new Object[] {db, true}, new Object[] {db, false}));
  }

  @ParameterizedTest(name = "{0} autoCommit={1}")
  @MethodSource("cases")
  void lockTablesNamingTheLeaseTableRunsUnderALease(TestDatabase db, boolean autoCommit)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("lock");
      try (Connection c = f.pool.getConnection()) {
        f.insert(c, 1, 0); // a row of the data table, outside the lease
      }
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement()) {
        c.setAutoCommit(autoCommit);
        s.execute("LOCK TABLES " + f.data + " WRITE, " + f.leaseTable + " READ");
        assertEquals(1, s.executeUpdate("UPDATE " + f.data + " SET note = 'locked' WHERE id = 1"));
        if (!autoCommit) {
          c.commit();
        }
        s.execute("UNLOCK TABLES");
      }
      assertEquals(1, f.count("note = 'locked'"));
    }
  }

  @ParameterizedTest(name = "{0} autoCommit={1}")
  @MethodSource("cases")
  void lockTablesLeavingOutTheLeaseTableIsRefusedBeforeItIsSent(TestDatabase db, boolean autoCommit)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("lock");
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement()) {
        c.setAutoCommit(autoCommit);
        LeaseLostSQLException e =
            assertThrows(
                LeaseLostSQLException.class, () -> s.execute("LOCK TABLES " + f.data + " WRITE"));
        assertEquals(LeaseLostSQLException.TRANSACTION_CONTROL_MIXED, e.getSQLState());
        assertTrue(e.getMessage().contains(f.leaseTable + " READ"), e.getMessage());
        // nothing was locked: the session still reads a table it did not lock, and the lease holds
        try (ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + f.leaseTable)) {
          assertTrue(rs.next());
        }
        assertTrue(lease.isHeld());
      }
    }
  }

  /**
   * Negative control: unchecked, the LOCK TABLES runs and the next statement under the lease fails.
   */
  @ParameterizedTest(name = "{0} autoCommit={1}")
  @MethodSource("cases")
  void negativeControlUncheckedTheNextStatementFailsWithTablesLocked(
      TestDatabase db, boolean autoCommit) throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("lock");
      try (LeaseContext.Scope scope = LeaseContext.bind(lease);
          Connection c =
              f.fenced(
                      WeakenedFence.weaken(f.options(), WeakenedFence.LOCK_TABLES_UNCHECKED)
                          .build())
                  .getConnection();
          Statement s = c.createStatement()) {
        c.setAutoCommit(autoCommit);
        s.execute("LOCK TABLES " + f.data + " WRITE");
        SQLException e =
            assertThrows(
                SQLException.class,
                () -> s.executeUpdate("UPDATE " + f.data + " SET note = 'x' WHERE id = 1"));
        assertTrue(e.getMessage().contains(f.leaseTable + " READ"), e.getMessage());
        if (!autoCommit) {
          c.rollback();
        }
        s.execute("UNLOCK TABLES");
      }
    }
  }

  @Test
  void theListIsReadAsMySqlReadsIt() {
    assertEquals(
        List.of("t", "leases"), LockTables.lockedByName("LOCK TABLES t WRITE, leases READ"));
    assertEquals(
        List.of("t", "leases"),
        LockTables.lockedByName("lock table `db`.`t` low_priority write,`Leases` read local;"));
    // an alias is not the name: the verify's FROM leases would not be covered
    assertEquals(
        List.of("t"),
        LockTables.lockedByName("LOCK TABLES t WRITE, leases AS l READ, leases x READ"));
    assertEquals(
        List.of("t", "leases"),
        LockTables.lockedByName("/* c */ LOCK /*!40000 TABLES */ t WRITE, leases READ -- x"));
    assertNull(LockTables.lockedByName("UNLOCK TABLES"));
    assertNull(LockTables.lockedByName("LOCK INSTANCE FOR BACKUP"));
    assertTrue(LockTables.leavesOut("LOCK TABLES t WRITE", "leases"));
    assertTrue(!LockTables.leavesOut("LOCK TABLES t WRITE, test.leases READ", "`leases`"));
  }
}
