package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 25 item 7: a PostgreSQL session whose default access mode is read-only ({@code SET SESSION
 * CHARACTERISTICS AS TRANSACTION READ ONLY}, or {@code default_transaction_read_only} as the role's
 * or database's setting would set it) reads under a lease, in autocommit and in a transaction, and
 * its {@code SET ... READ WRITE} runs; a stale lease is still refused there. The negative control
 * takes pgjdbc's {@code isReadOnly()} for the server's answer, as before: 25006.
 */
class ReadOnlySessionDefaultTest {

  static Stream<Object[]> postgresql() {
    return Stream.of(
        new Object[] {
          TestDatabase.POSTGRESQL, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"
        },
        new Object[] {TestDatabase.POSTGRESQL, "SET default_transaction_read_only = on"});
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresql")
  void aReadOnlyByDefaultSessionReadsAndIsSetBackToReadWriteUnderALease(TestDatabase db, String ro)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("ro");
      try (Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement()) {
        s.execute(ro); // no lease bound: as the session arrives from the pool
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          assertEquals(0, f.count(c, "id > 0"), "autocommit read");
          c.setAutoCommit(false);
          assertEquals(0, f.count(c, "id > 0"), "read in a transaction");
          c.commit();
          c.setAutoCommit(true);
          s.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE");
          f.insert(c, 1, lease.term()); // writable again, verified with STRICT's lock
        }
        assertEquals(1, f.count("id = 1"));
        s.execute("RESET default_transaction_read_only");
      }
    }
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresql")
  void aStaleLeaseIsStillRefusedInAReadOnlyByDefaultSession(TestDatabase db, String ro)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("ro");
      f.takeOver(lease);
      try (Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement()) {
        s.execute(ro);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          LeaseLostSQLException e =
              assertThrows(LeaseLostSQLException.class, () -> f.count(c, "id > 0"));
          assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
        }
        s.execute("RESET default_transaction_read_only");
      }
    }
  }

  /** Negative control: trusting pgjdbc's flag (false here) takes the lock; the server refuses. */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("postgresql")
  void negativeControlTrustingTheDriversFlagFailsEveryRead(TestDatabase db, String ro)
      throws Exception {
    try (Fixture f = new Fixture(db, 2)) {
      Lease lease = f.holding("ro");
      try (Connection c =
              f.fenced(
                      WeakenedFence.weaken(f.options(), WeakenedFence.TRUST_READ_ONLY_FLAG).build())
                  .getConnection();
          Statement s = c.createStatement()) {
        s.execute(ro);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          SQLException e = assertThrows(SQLException.class, () -> f.count(c, "id > 0"));
          assertEquals("25006", e.getSQLState(), e.getMessage());
        }
        s.execute("RESET default_transaction_read_only");
      }
    }
  }

  static int one(Statement s) throws SQLException {
    try (ResultSet rs = s.executeQuery("SELECT 1")) {
      assertTrue(rs.next());
      return rs.getInt(1);
    }
  }
}
