package dev.lease.conformance.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.conformance.NegativeControl;
import dev.lease.conformance.PropertyResult;
import dev.lease.conformance.QuickRun;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.OnEveryServer;
import dev.lease.testing.TestDatabase;

/**
 * The paused holder on every database, with its negative controls beside it: every round must be
 * taken over across the open transaction (servers) or have its claim wait for it (SQLite), and the
 * same schedule with VERIFY fencing (no lock: the stale commit lands after the claim on the three
 * servers) and with no fencing at all (caught on SQLite too) must be reported as violations.
 */
class PausedHolderPropertyTest {

  @OnEveryDatabase
  void pausedStrictHolderCannotCommitAfterTakeover(TestDatabase db) {
    PropertyResult r = run(db, Fence.STRICT);
    assertEquals(PropertyResult.Verdict.HOLDS, r.verdict(), r.failure() + " " + r.counts());
    String event =
        db.isSqlite()
            ? "rounds whose claim waited for the paused verified transaction past the lease"
            : "rounds taken over while the paused verified transaction was open";
    assertEquals(r.schedules(), r.observed(event), r.counts().toString());
  }

  @OnEveryServer
  void negativeControlVerifyModeWithAPauseInsideTheTransactionIsCaught(TestDatabase db) {
    PropertyResult r = run(db, Fence.VERIFY);
    assertTrue(NegativeControl.caught(r), "VERIFY mode with a pause must be caught: " + r);
    assertTrue(r.failure().contains("invariant 3"), r.failure());
  }

  @OnEveryDatabase
  void negativeControlUnfencedHolderIsCaught(TestDatabase db) {
    PropertyResult r = run(db, Fence.NONE);
    assertTrue(NegativeControl.caught(r), "an unfenced stale holder must be caught: " + r);
    assertTrue(r.failure().contains("invariant 3"), r.failure());
  }

  private static PropertyResult run(TestDatabase db, Fence fence) {
    return QuickRun.on(db, new PausedHolderProperty(fence), 1L, fence);
  }
}
