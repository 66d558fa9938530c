package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnPostgresql;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;

/**
 * Review S3: {@code ROLLBACK TO SAVEPOINT} sent as SQL while no lease is bound, inside a
 * transaction verified under a lease, frees the verify's lock on PostgreSQL (a savepoint set before
 * the verify); the next statement under the lease must verify again, as it does when the lease is
 * bound during the rollback.
 */
class SavepointRollbackWithoutLeaseTest {

  @OnEveryDatabase
  void theNextStatementUnderTheLeaseVerifiesAgain(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("sp");
      assertEquals(2, verifiesAfterUnleasedRollbackTo(f, lease, f.options().build()));
      assertEquals(1, f.count("id = 2"));
    }
  }

  /** Negative control: without the re-verify the next statement trusts the freed lock. */
  @OnEveryDatabase
  void negativeControlWithoutReverifyTheNextStatementTrustsTheLock(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("sp");
      assertEquals(
          1,
          verifiesAfterUnleasedRollbackTo(
              f,
              lease,
              WeakenedFence.weaken(
                      f.options(), WeakenedFence.PREVIOUS_REFUSAL, WeakenedFence.NO_REVERIFY)
                  .build()));
    }
  }

  /** PostgreSQL: the stale holder's write after the unleased ROLLBACK TO is refused. */
  @OnPostgresql
  void aTakeoverAfterTheUnleasedRollbackToRefusesTheStaleWrite(TestDatabase db) throws Exception {
    assertEquals("refused", staleWrite(db, false));
  }

  /** Negative control: without the re-verify the stale write commits after the takeover. */
  @OnPostgresql
  void negativeControlWithoutReverifyTheStaleWriteCommits(TestDatabase db) throws Exception {
    assertEquals("committed", staleWrite(db, true));
  }

  private static int verifiesAfterUnleasedRollbackTo(Fixture f, Lease lease, FencingOptions o)
      throws Exception {
    try (Connection c = f.fenced(o).getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      f.count(c, "1 = 1"); // no lease yet: the transaction starts unfenced
      s.execute("SAVEPOINT a");
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        f.insert(c, 1, lease.term()); // verified (and locked) after the savepoint
      }
      s.execute("ROLLBACK TO SAVEPOINT a"); // no lease bound
      try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        f.insert(c, 2, lease.term());
        if (f.db == TestDatabase.POSTGRESQL
            && !WeakenedFence.of(o).contains(WeakenedFence.NO_REVERIFY)) {
          assertFalse(ReadOnlyFlagTest.leaseRowFree(f, lease), "verified again: locked");
        }
        c.commit();
      }
      return f.verified.get();
    }
  }

  private static String staleWrite(TestDatabase db, boolean weakened) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("sp");
      FencingOptions.Builder o = f.options();
      if (weakened) {
        WeakenedFence.weaken(
            o,
            WeakenedFence.PREVIOUS_REFUSAL,
            WeakenedFence.NO_REVERIFY); // the commit proof would catch it
      }
      try (Connection c = f.fenced(o.build()).getConnection();
          Statement s = c.createStatement()) {
        c.setAutoCommit(false);
        f.count(c, "1 = 1");
        s.execute("SAVEPOINT a");
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          f.insert(c, 1, lease.term());
        }
        s.execute("ROLLBACK TO SAVEPOINT a");
        assertTrue(ReadOnlyFlagTest.leaseRowFree(f, lease), "the rollback freed the lock");
        f.takeOver(lease);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          f.insert(c, 2, lease.term());
          c.commit();
        } catch (LeaseLostSQLException e) {
          c.rollback();
          return "refused";
        }
      }
      return f.count("id = 2") == 1 ? "committed" : "lost";
    }
  }
}
