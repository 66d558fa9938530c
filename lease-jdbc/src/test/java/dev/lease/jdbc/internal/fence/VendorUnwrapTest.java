package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencedConnection;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.OutsideTransactionPolicy;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnPostgresql;
import dev.lease.testing.TestDatabase;
import java.io.StringReader;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.postgresql.PGConnection;
import org.postgresql.core.BaseConnection;

/**
 * Review S4: under a bound lease, {@code unwrap} must not hand out a driver object that writes past
 * the fence. In autocommit mode what a vendor object runs commits on its own (pgjdbc's COPY), so it
 * is handed out only after a verify; the driver's own {@code Connection} and {@code Statement}
 * types are never handed out under a lease.
 */
class VendorUnwrapTest {

  /**
   * These tests exercise the autocommit path that hands vendor objects out after a verify of their
   * own ({@link OutsideTransactionPolicy#VERIFY_FIRST}); under STRICT's default such an unwrap is
   * refused outright (KeptDriverObjectTest).
   */
  private static FencingOptions.Builder verifyFirst() {
    return FencingOptions.builder().outsideTransaction(OutsideTransactionPolicy.VERIFY_FIRST);
  }

  // ---- a lost lease in autocommit mode, every database

  @OnEveryDatabase
  void aVendorObjectIsNotHandedOutInAutocommitUnderALostLease(TestDatabase db) throws Exception {
    assertEquals("refused", unwrapAfterTakeover(db, verifyFirst()));
  }

  /** Negative control: checking only an open transaction hands the vendor object out. */
  @OnEveryDatabase
  void negativeControlWithoutTheUnwrapChecksTheVendorObjectIsHandedOut(TestDatabase db)
      throws Exception {
    assertEquals(
        "handed out",
        unwrapAfterTakeover(
            db, WeakenedFence.weaken(verifyFirst(), WeakenedFence.NO_UNWRAP_CHECKS)));
  }

  private static String unwrapAfterTakeover(TestDatabase db, FencingOptions.Builder options)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("vendor");
      f.takeOver(lease); // the holder does not know yet
      Class<?> vendor = Class.forName(WrapperTest.vendorConnection(db));
      try (Connection c = f.fenced(options.listener(f.counter).build()).getConnection();
          Statement s = c.createStatement()) {
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          try {
            assertTrue(vendor.isInstance(c.unwrap(vendor)));
            return "handed out";
          } catch (SQLException e) {
            return "refused";
          }
        } finally {
          assertTrue(c.getAutoCommit(), "still in autocommit mode");
        }
      }
    }
  }

  // ---- pgjdbc's COPY in autocommit, and BaseConnection

  @OnPostgresql
  void copyInAutocommitUnderALostLeaseWritesNothing(TestDatabase db) throws Exception {
    assertEquals(0, copyAfterTakeover(db, verifyFirst()));
  }

  /** Negative control: the COPY commits on its own under the lost lease. */
  @OnPostgresql
  void negativeControlWithoutTheUnwrapChecksTheCopyCommits(TestDatabase db) throws Exception {
    assertEquals(
        1,
        copyAfterTakeover(db, WeakenedFence.weaken(verifyFirst(), WeakenedFence.NO_UNWRAP_CHECKS)));
  }

  /** Rows the COPY left in the data table. */
  private static int copyAfterTakeover(TestDatabase db, FencingOptions.Builder options)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("copy");
      f.takeOver(lease);
      try (Connection c = f.fenced(options.listener(f.counter).build()).getConnection();
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        try {
          PGConnection pg = c.unwrap(PGConnection.class);
          pg.getCopyAPI()
              .copyIn("COPY " + f.data + " (id, term) FROM STDIN", new StringReader("1\t1\n"));
        } catch (LeaseLostSQLException e) {
          assertEquals(LeaseLostSQLException.REFUSED, e.getSQLState());
        }
      }
      return f.count(null);
    }
  }

  @OnPostgresql
  void theDriversOwnConnectionTypeIsNotHandedOutInAutocommitUnderALease(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("base");
      try (Connection c = f.fenced(f.options().build()).getConnection();
          Statement s = c.createStatement()) {
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          assertThrows(SQLException.class, () -> c.unwrap(BaseConnection.class));
          assertThrows(SQLException.class, () -> s.unwrap(org.postgresql.jdbc.PgStatement.class));
          assertEquals(0, f.verified.get());
          c.setAutoCommit(false);
          // inside a transaction: verified first, for use in it (the agent's vendor faces)
          assertFalse(c.unwrap(BaseConnection.class) instanceof FencedConnection);
          assertEquals(1, f.verified.get());
          c.rollback();
        }
        assertTrue(c.unwrap(BaseConnection.class) != null, "no lease bound: passes through");
      }
    }
  }

  /** Negative control: without the checks the raw driver connection is handed out. */
  @OnPostgresql
  void negativeControlWithoutTheUnwrapChecksTheRawConnectionIsHandedOut(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("base");
      try (Connection c =
              f.fenced(WeakenedFence.weaken(f.options(), WeakenedFence.NO_UNWRAP_CHECKS).build())
                  .getConnection();
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        assertFalse(c.unwrap(BaseConnection.class) instanceof FencedConnection);
      }
    }
  }
}
