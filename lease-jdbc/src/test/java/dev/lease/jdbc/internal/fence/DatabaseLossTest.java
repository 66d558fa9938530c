package dev.lease.jdbc.internal.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.LossReason;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.testing.CountingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.PgWire;
import dev.lease.testing.TestDatabase;
import dev.lease.testing.UrlDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Issue 23, "a lease learns what the database knows": when the database refuses a fenced
 * transaction (LF001), the lease is lost at once with {@link LossReason#DATABASE}, its loss
 * handling runs, and every later transaction is refused locally without a statement sent. And a
 * commit right after a loss is refused by the lease's own state, not by whichever loss listener
 * happens to run first. Each with its negative control.
 */
class DatabaseLossTest {

  @OnEveryDatabase
  void aRefusedTransactionMarksTheLeaseLostAndTheNextIsRefusedWithoutARoundTrip(TestDatabase db)
      throws Exception {
    Outcome o = refusedThenNext(db, false);
    assertFalse(o.heldAfter, db + ": isHeld() is false after the refusal");
    assertTrue(o.lostAfter, db + ": isLost()");
    assertEquals(LossReason.DATABASE, o.reason, db + ": the reason");
    assertTrue(o.listenerFired, db + ": the loss listener ran");
    assertEquals(LeaseLostSQLException.REFUSED, o.nextState, db + ": the next one is refused");
    assertEquals(List.of(), o.nextTexts, db + ": without a statement sent");
  }

  /** Negative control: the refusal kept to the fence; the lease answers held and asks again. */
  @OnEveryDatabase
  void negativeControlARefusalNotReportedLeavesTheLeaseHeld(TestDatabase db) throws Exception {
    Outcome o = refusedThenNext(db, true);
    assertTrue(o.heldAfter, db + ": the lease still says held");
    assertFalse(o.nextTexts.isEmpty(), db + ": and the next transaction asks the database again");
  }

  record Outcome(
      boolean heldAfter,
      boolean lostAfter,
      LossReason reason,
      boolean listenerFired,
      String nextState,
      List<String> nextTexts) {}

  private static Outcome refusedThenNext(TestDatabase db, boolean weakened) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      Lease lease = f.manager("a", LeaseTimings.DEFAULTS).tryClaim("gone").orElseThrow();
      CountDownLatch lost = new CountDownLatch(1);
      lease.onLoss(l -> lost.countDown());
      // PostgreSQL: the verify may travel inside pgjdbc's own round trip, past the counting
      // wrapper, so a proxy counts the round trips on the wire too
      PgWire proxy = db == TestDatabase.POSTGRESQL ? new PgWire("127.0.0.1", 5432) : null;
      if (proxy != null) {
        f.closeLater(proxy);
      }
      CountingDataSource counting =
          new CountingDataSource(proxy != null ? new UrlDataSource(proxy.url()) : f.pool);
      FencingOptions.Builder b = f.options();
      FencedDataSource ds =
          FencedDataSource.wrap(
              counting,
              (weakened ? WeakenedFence.weaken(b, WeakenedFence.REFUSAL_NOT_REPORTED) : b).build());
      f.takeOver(lease); // a successor's claim, as the database sees it
      try (Connection c = ds.getConnection();
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        c.setAutoCommit(false);
        LeaseLostSQLException first =
            assertThrows(LeaseLostSQLException.class, () -> f.insert(c, 1, lease.term()));
        assertEquals(LeaseLostSQLException.REFUSED, first.getSQLState());
        c.rollback();
        boolean listenerFired = weakened || lost.await(10, TimeUnit.SECONDS);
        boolean held = lease.isHeld();
        counting.reset();
        long tripsBefore = proxy != null ? proxy.roundTrips() : 0;
        String nextState;
        try {
          f.insert(c, 2, lease.term());
          nextState = null;
        } catch (SQLException e) {
          nextState = e.getSQLState();
        }
        List<String> texts = new ArrayList<>();
        for (String t : counting.texts()) {
          // SQLite: the fence's BEGIN before the lease check is a call into the in-process
          // library, no round trip
          if (!(db.isSqlite() && t.equals("BEGIN"))) {
            texts.add(t);
          }
        }
        if (proxy != null && proxy.roundTrips() > tripsBefore) {
          texts.add((proxy.roundTrips() - tripsBefore) + " round trips on the wire");
        }
        c.rollback();
        assertEquals(0, f.count(null), db + ": nothing committed");
        return new Outcome(
            held, lease.isLost(), lease.lossReason().orElse(null), listenerFired, nextState, texts);
      }
    }
  }

  @OnEveryDatabase
  void aCommitRightAfterALossIsRefusedBeforeAnyLossListenerRan(TestDatabase db) throws Exception {
    assertEquals(LeaseLostSQLException.POISONED, commitRightAfterLoss(db, false), db + ": refused");
  }

  /** Negative control: the commit trusts the loss listener, which has not run yet. */
  @OnEveryDatabase
  void negativeControlACommitTrustingTheLossListenerCommitsAfterTheLoss(TestDatabase db)
      throws Exception {
    assertEquals(null, commitRightAfterLoss(db, true), db + ": committed after the loss");
  }

  /**
   * Verifies a transaction, loses the lease at its local deadline with the loss handling held back
   * (its executor queues the tasks: the worst order of the loss listeners), then commits. Returns
   * the commit's SQLState, null if it committed.
   */
  private static String commitRightAfterLoss(TestDatabase db, boolean weakened) throws Exception {
    try (Fixture f = new Fixture(db, 3)) {
      ConcurrentLinkedQueue<Runnable> lossTasks = new ConcurrentLinkedQueue<>();
      LeaseManager m =
          f.closeLater(
              LeaseInternals.lossExecutor(
                      LeaseInternals.clock(
                          LeaseManager.builder(f.pool)
                              .table(f.leaseTable)
                              .instance("a")
                              .timings(LeaseTimings.DEFAULTS)
                              .failurePolicy(FailurePolicy.logOnly())
                              .createTableIfMissing(),
                          () -> System.nanoTime() + f.skew.get()),
                      lossTasks::add)
                  .build());
      Lease lease = m.tryClaim("late").orElseThrow();
      FencingOptions.Builder b = f.options();
      FencedDataSource ds =
          f.fenced(
              (weakened ? WeakenedFence.weaken(b, WeakenedFence.COMMIT_TRUSTS_LOSS_LISTENER) : b)
                  .build());
      String state = null;
      try (Connection c = ds.getConnection();
          LeaseContext.Scope scope = LeaseContext.bind(lease)) {
        c.setAutoCommit(false);
        f.insert(c, 1, lease.term());
        f.skew.addAndGet(LeaseTimings.DEFAULTS.localDeadline().toNanos());
        assertFalse(lease.isHeld(), db + ": lost at the local deadline");
        assertFalse(lossTasks.isEmpty(), db + ": its handling is queued, not run");
        try {
          c.commit();
        } catch (SQLException e) {
          state = e.getSQLState();
          c.rollback();
        }
      } finally {
        lossTasks.forEach(Runnable::run);
      }
      assertEquals(state == null ? 1 : 0, f.count(null), db + ": committed exactly when allowed");
      return state;
    }
  }
}
