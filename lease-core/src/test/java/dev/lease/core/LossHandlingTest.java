package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Loss handling has threads of its own: a {@link LeaseListener#lost} that blocks (here until the
 * test ends it) delays no other lease's renewals or deadline checks. Negative control: the old
 * handling on the thread that found the loss (a keeper thread) starves the other lease.
 */
class LossHandlingTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(1_000, 100, 500, 300, 300);

  @OnEveryDatabase
  void aBlockingLostListenerDelaysNoOtherLease(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Outcome ok = blockedListeners(f, null);
      assertTrue(ok.renewalsWhileBlocked >= 5, "the other lease kept renewing: " + ok);
      assertTrue(ok.stillHeld, "and was never lost: " + ok);

      Outcome broken = blockedListeners(f, WeakenedLifecycle.lossHandlingInline());
      assertFalse(
          broken.renewalsWhileBlocked >= 5 && broken.stillHeld,
          "negative control: listeners on the keeper threads starve the other lease: " + broken);
    }
  }

  private record Outcome(int renewalsWhileBlocked, boolean stillHeld) {}

  /**
   * Three leases are lost together (their renewals fail) and their listener blocks in lost(); then
   * a fourth lease of the same manager is claimed and held while the listeners still block.
   */
  private static Outcome blockedListeners(Fixture f, WeakenedLifecycle fault) throws Exception {
    FailingDataSource failing = new FailingDataSource(f.pool(3));
    CountDownLatch blocked = new CountDownLatch(2);
    CountDownLatch unblock = new CountDownLatch(1);
    AtomicInteger renewalsOfB = new AtomicInteger();
    String b = "b-" + fault;
    LeaseManager.Builder builder =
        f.builder(failing, "blocking-" + fault)
            .timings(TIMINGS)
            .listener(
                new LeaseListener() {
                  @Override
                  public void lost(Lease lease, LossReason reason) {
                    if (lease.name().equals(b)) {
                      return; // only the three lost together block
                    }
                    blocked.countDown();
                    try {
                      unblock.await(20, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                  }

                  @Override
                  public void renewed(Lease lease) {
                    if (lease.name().equals(b)) {
                      renewalsOfB.incrementAndGet();
                    }
                  }
                });
    LeaseManager m = f.build(builder, fault);
    for (int i = 0; i < 3; i++) {
      m.tryClaim("a" + i + "-" + fault).orElseThrow().hold();
    }
    failing.failing(true);
    try {
      assertTrue(blocked.await(5, TimeUnit.SECONDS), "the listeners are blocked in lost()");
      failing.failing(false);
      Lease lease = m.tryClaim(b).orElseThrow().hold();
      long deadline = System.nanoTime() + Duration.ofMillis(1_500).toNanos();
      while (renewalsOfB.get() < 5 && System.nanoTime() < deadline) {
        Thread.sleep(20); // polling a bounded wait, not a synchronisation
      }
      return new Outcome(renewalsOfB.get(), lease.isHeld());
    } finally {
      failing.failing(false);
      unblock.countDown();
    }
  }
}
