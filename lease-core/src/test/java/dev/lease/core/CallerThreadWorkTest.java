package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A caller's own thread bound to a lease ({@link LeaseInternals#bindCurrentThread}, what the Spring
 * starter's {@code @Leased} methods run on) ends with the lease as {@code runUnder}'s thread does:
 * a release interrupts it and waits for it before it gives the row back (negative control: the
 * release-first fault hands the row over while the thread still works); a loss interrupts it at
 * once and runs the failure policy for it once the grace period passed, and not for a thread that
 * ended before.
 */
class CallerThreadWorkTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(10_000, 100, 5_000, 2_000, 300);

  private static LeaseManager manager(Fixture f, String instance, WeakenedLifecycle fault) {
    return f.build(f.builder(f.pool(3), instance).timings(TIMINGS), fault);
  }

  @OnEveryDatabase
  void aReleaseStopsTheBoundCallerThreadBeforeItGivesTheRowBack(TestDatabase db) throws Exception {
    Fixture.assertControlled(
        db,
        (f, fault) -> ShutdownTest.rowHeldWhenTheReleaseInterrupted(f, fault, true),
        true,
        "the thread was interrupted while the row was still its own",
        WeakenedLifecycle.releaseBeforeStoppingWork(),
        false,
        "releasing first hands the row over while the thread still works");
  }

  @OnEveryDatabase
  void aLossInterruptsTheBoundCallerThreadAndRunsThePolicyIfItDoesNotEnd(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = manager(f, "losing", null);

      // a thread that ended its work before the loss: not interrupted, no policy
      Lease early = m.tryClaim("ended-before").orElseThrow();
      assertFalse(LeaseInternals.bindCurrentThread(early).end());
      early.lose(LossReason.NOT_HELD);

      // a thread that ignores the interrupt (stuck work): the policy runs once the grace passed
      Lease lease = m.tryClaim("stuck").orElseThrow();
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch interrupted = new CountDownLatch(1);
      CountDownLatch leave = new CountDownLatch(1);
      AtomicBoolean stopped = new AtomicBoolean();
      Thread stuck =
          new Thread(
              () -> {
                CallerWork work = LeaseInternals.bindCurrentThread(lease);
                started.countDown();
                while (true) {
                  try {
                    if (leave.await(20, TimeUnit.SECONDS)) {
                      break;
                    }
                  } catch (InterruptedException e) {
                    interrupted.countDown(); // ignored
                  }
                }
                stopped.set(work.end());
              },
              "stuck-caller");
      stuck.start();
      assertTrue(started.await(5, TimeUnit.SECONDS));
      lease.lose(LossReason.NOT_HELD);
      assertTrue(interrupted.await(5, TimeUnit.SECONDS), "interrupted at once");
      Fixture.await(
          "the failure policy", Duration.ofSeconds(10), () -> !f.failurePolicyCalls.isEmpty());
      leave.countDown();
      stuck.join(10_000);
      assertTrue(stopped.get());
      assertEquals(List.of(lease + " stuck-caller"), f.failurePolicyCalls);
    }
  }
}
