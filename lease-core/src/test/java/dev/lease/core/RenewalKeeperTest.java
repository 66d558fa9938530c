package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.internal.MonotonicClock;
import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.opentest4j.AssertionFailedError;

/**
 * The keeper holds a lease for as long as renewals succeed, and when they stop it declares the loss
 * before the database lets anyone else claim (invariant 2 of DESIGN.md), judged by the database's
 * own clock: the database time read right after the loss was declared is still before the row's
 * {@code expires_at_ms}.
 */
class RenewalKeeperTest {

  // Short, but with room for stalls on a shared, overloaded 2-core machine (load average 12 seen):
  // renewals every 50 ms, so twelve attempts fit into the local deadline; 600 ms between the local
  // deadline and the expiry for the order check's read of the database clock.
  private static final long LEASE_MS = 1_200;
  private static final long LOCAL_DEADLINE_MS = 600;
  private static final LeaseTimings TIMINGS =
      Fixture.timings(LEASE_MS, 50, LOCAL_DEADLINE_MS, 300, 200);

  /**
   * How long the keeper must hold against a rival: four lease durations, each an expiry the
   * renewals must move on (~90 renewals). Ten took 53 s of CI for nothing more (issue 37).
   */
  private static final int HELD_DURATIONS = 4;

  /** What a lost() listener saw: the database time right after the loss, and when it came. */
  static final class LossWitness implements LeaseListener {
    final LeaseManager observer;
    final CountDownLatch lost = new CountDownLatch(1);
    final AtomicLong declaredAtDbMs = new AtomicLong();
    final AtomicLong declaredAtNanos = new AtomicLong();
    final AtomicReference<LossReason> reason = new AtomicReference<>();
    final AtomicInteger renewals = new AtomicInteger();
    final AtomicInteger failedRenewals = new AtomicInteger();

    LossWitness(LeaseManager observer) {
      this.observer = observer;
    }

    @Override
    public void lost(Lease lease, LossReason why) {
      declaredAtNanos.set(System.nanoTime());
      // through a DataSource that never fails: the database's clock at (just after) the
      // declaration;
      // a read that ran out of its 300 ms on a loaded machine is read again: a later clock can only
      // make the order check below stricter
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (true) {
        try {
          declaredAtDbMs.set(observer.databaseTimeMillis());
          break;
        } catch (Attempts.AttemptTimedOut e) {
          if (System.nanoTime() - deadline > 0) {
            throw e;
          }
        }
      }
      reason.set(why);
      lost.countDown();
    }

    @Override
    public void renewed(Lease lease) {
      renewals.incrementAndGet();
    }

    @Override
    public void renewalFailed(Lease lease, Exception cause) {
      failedRenewals.incrementAndGet();
    }
  }

  @OnEveryDatabase
  void holdsThroughFourLeaseDurationsThenGivesUpBeforeTheDatabaseLetsAnyoneClaim(TestDatabase db)
      throws InterruptedException {
    try (Fixture f = new Fixture(db)) {
      LeaseManager observer = f.manager(f.admin, "observer", TIMINGS);
      LossWitness witness = new LossWitness(observer);
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      LeaseManager holder =
          f.track(f.builder(failing, "holder").timings(TIMINGS).listener(witness).build());
      LeaseManager rival = f.manager("rival", TIMINGS);

      Lease lease = holder.tryClaim("kept").orElseThrow().hold();
      long firstExpiry = f.row("kept").expiresAtMs();
      long start = System.nanoTime();
      int refusals = 0;
      while (System.nanoTime() - start < Duration.ofMillis(HELD_DURATIONS * LEASE_MS).toNanos()) {
        assertTrue(rival.tryClaim("kept").isEmpty(), "the rival got a kept lease");
        refusals++;
        assertTrue(lease.isHeld(), "the keeper lost the lease: " + lease.lossReason());
        LockSupport.parkNanos(Duration.ofMillis(20).toNanos()); // paces the rival, not a sync
      }
      Fixture.Row row = f.row("kept");
      assertEquals(lease.term(), row.term());
      assertEquals(lease.holder(), row.holder());
      assertTrue(
          row.expiresAtMs() >= firstExpiry + (HELD_DURATIONS - 1) * LEASE_MS,
          "renewals moved the expiry on: " + firstExpiry + " -> " + row.expiresAtMs());
      assertTrue(lease.verify());
      assertTrue(witness.renewals.get() >= 20, "renewals: " + witness.renewals.get());
      assertTrue(refusals > 10, "rival attempts: " + refusals);
      assertEquals(1, witness.lost.getCount(), "no loss while renewals succeed");

      long droppedAt = System.nanoTime();
      failing.failing(true);
      assertTrue(witness.lost.await(5, TimeUnit.SECONDS), "loss declared");
      long expiresAtMs = f.row("kept").expiresAtMs();
      assertEquals(LossReason.LOCAL_DEADLINE, witness.reason.get());
      long lostAfterMs = Duration.ofNanos(witness.declaredAtNanos.get() - droppedAt).toMillis();
      assertTrue(
          lostAfterMs <= LOCAL_DEADLINE_MS + 1_000,
          "gave up "
              + lostAfterMs
              + " ms after renewals stopped (local deadline "
              + LOCAL_DEADLINE_MS
              + " ms)");
      assertLossDeclaredBeforeDatabaseExpiry(witness.declaredAtDbMs.get(), expiresAtMs);
      assertFalse(lease.isHeld());
      assertTrue(witness.failedRenewals.get() > 0);

      Fixture.await(
          "the rival's claim after the expiry",
          Duration.ofSeconds(5),
          () -> rival.tryClaim("kept").isPresent());
      assertTrue(f.row("kept").term() > lease.term());
      failing.failing(false);
    }
  }

  /**
   * Negative control: a holder whose monotonic clock runs at a third of real speed (far outside the
   * configured {@code maxClockRateError}) makes its local deadline effectively 1800 ms, later than
   * the 1200 ms lease; the same order check catches its late declaration.
   */
  @OnEveryDatabase
  void slowProcessClockIsCaughtByTheSameOrderCheck(TestDatabase db) throws InterruptedException {
    try (Fixture f = new Fixture(db)) {
      LeaseManager observer = f.manager(f.admin, "observer", TIMINGS);
      LossWitness witness = new LossWitness(observer);
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      long origin = System.nanoTime();
      MonotonicClock slow = () -> origin + (System.nanoTime() - origin) / 3;
      LeaseManager holder =
          f.track(
              f.builder(failing, "slow").timings(TIMINGS).clock(slow).listener(witness).build());
      Lease lease = holder.tryClaim("slow").orElseThrow().hold();
      Fixture.await("a renewal", Duration.ofSeconds(5), () -> witness.renewals.get() >= 2);
      failing.failing(true);
      assertTrue(witness.lost.await(5, TimeUnit.SECONDS), "loss declared");
      long expiresAtMs = f.row("slow").expiresAtMs();
      AssertionFailedError caught =
          assertThrows(
              AssertionFailedError.class,
              () ->
                  assertLossDeclaredBeforeDatabaseExpiry(
                      witness.declaredAtDbMs.get(), expiresAtMs));
      assertTrue(
          caught.getMessage().contains("after the database let others claim"), caught.getMessage());
      assertFalse(lease.isHeld());
    }
  }

  /** The safety check: the holder gave the lease up while the database still counted it as live. */
  static void assertLossDeclaredBeforeDatabaseExpiry(long declaredAtDbMs, long expiresAtMs) {
    assertTrue(
        declaredAtDbMs < expiresAtMs,
        "loss declared at database time "
            + declaredAtDbMs
            + ", "
            + (declaredAtDbMs - expiresAtMs)
            + " ms after the database let others claim ("
            + "expires_at_ms "
            + expiresAtMs
            + ")");
  }
}
