package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Savepoint;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Review S8: two paths that skipped the fence's end-of-transaction rules. {@code endRequest()} (a
 * pool's request boundary) forgot a verified transaction instead of rolling it back, so the next
 * borrower's commit committed it; {@code releaseSavepoint} ran in a poisoned transaction (SQLite
 * commits when the outermost savepoint is released).
 */
class RequestBoundaryTest {

  @OnEveryDatabase
  void endRequestRollsBackAVerifiedTransactionTheNextBorrowerWouldCommit(TestDatabase db)
      throws Exception {
    assertEquals(0, committedAfterEndRequest(db, FencingOptions.builder()));
  }

  /**
   * Negative control: forgetting the transaction at endRequest lets the next borrower commit it.
   */
  @OnEveryDatabase
  void negativeControlWithoutTheRollbackTheNextBorrowerCommitsIt(TestDatabase db) throws Exception {
    assertEquals(
        1,
        committedAfterEndRequest(
            db,
            WeakenedFence.weaken(FencingOptions.builder(), WeakenedFence.NO_ROLLBACK_AT_CLOSE)));
  }

  private static int committedAfterEndRequest(TestDatabase db, FencingOptions.Builder options)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("req");
      try (Connection c = f.fenced(options.listener(f.counter).build()).getConnection()) {
        c.beginRequest();
        c.setAutoCommit(false);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          f.insert(c, 1, lease.term());
        }
        c.endRequest(); // the pool's boundary: the request is over
        c.beginRequest(); // the next borrower, no lease bound
        c.commit();
        c.setAutoCommit(true);
        c.endRequest();
      }
      return f.count("id = 1");
    }
  }

  @OnEveryDatabase
  void releaseSavepointIsRefusedInAPoisonedTransaction(TestDatabase db) throws Exception {
    assertEquals("refused", releaseAfterLoss(db, FencingOptions.builder()));
  }

  /** Negative control: without the check the release runs in the poisoned transaction. */
  @OnEveryDatabase
  void negativeControlWithoutTheCheckTheReleaseRuns(TestDatabase db) throws Exception {
    assertEquals(
        "released",
        releaseAfterLoss(
            db, WeakenedFence.weaken(FencingOptions.builder(), WeakenedFence.NO_COMMIT_CHECKS)));
  }

  private static String releaseAfterLoss(TestDatabase db, FencingOptions.Builder options)
      throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.holding("rel");
      try (Connection c = f.fenced(options.listener(f.counter).build()).getConnection()) {
        c.setAutoCommit(false);
        try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
          Savepoint sp = c.setSavepoint("s1"); // verified before it
          f.insert(c, 1, lease.term());
          f.skew.addAndGet(TimeUnit.SECONDS.toNanos(11)); // past the local deadline: lost
          assertFalse(lease.isHeld());
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
          while (f.poisoned.get() == 0 && System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // listeners run async
          }
          assertEquals(1, f.poisoned.get(), "the loss poisoned the transaction");
          try {
            c.releaseSavepoint(sp);
            return "released";
          } catch (LeaseLostSQLException e) {
            assertEquals(LeaseLostSQLException.POISONED, e.getSQLState());
            return "refused";
          } finally {
            c.rollback();
          }
        }
      }
    }
  }
}
