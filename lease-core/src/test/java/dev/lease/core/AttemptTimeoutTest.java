package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The attempt timeout bounds a whole attempt, the connection borrow included: a pool whose {@code
 * getConnection} blocks (an exhausted pool, a server that accepts no connection) makes an attempt
 * fail after the attempt timeout, so renewals keep their cadence and a claim returns. Negative
 * control: the old, unbounded borrow.
 */
class AttemptTimeoutTest {

  /** Renew every 100 ms, each attempt at most 300 ms, local deadline 1 s. */
  private static final LeaseTimings TIMINGS = Fixture.timings(2_000, 100, 1_000, 300, 300);

  private static LeaseManager manager(
      Fixture f,
      FailingDataSource ds,
      String instance,
      WeakenedLifecycle fault,
      LeaseListener listener) {
    return f.build(f.builder(ds, instance).timings(TIMINGS).listener(listener), fault);
  }

  @OnEveryDatabase
  void aBlockedConnectionBorrowDoesNotStopTheRenewals(TestDatabase db) throws Exception {
    Fixture.assertControlled(
        db,
        AttemptTimeoutTest::keptAcrossAStalledBorrow,
        true,
        "renewed on and still held",
        WeakenedLifecycle.unboundedAttempt(),
        false,
        "an unbounded borrow stops the renewals and the lease is lost");
  }

  /** One renewal's borrow blocks for good; true if later renewals kept the lease. */
  private static boolean keptAcrossAStalledBorrow(Fixture f, WeakenedLifecycle fault)
      throws Exception {
    FailingDataSource pool = new FailingDataSource(f.pool(3));
    AtomicInteger renewals = new AtomicInteger();
    LeaseManager m =
        manager(
            f, pool, "stalled-" + fault, fault, Fixture.onRenewed(l -> renewals.incrementAndGet()));
    Lease lease = m.tryClaim("stalled-" + fault).orElseThrow().hold();
    try {
      pool.stall(0, 1);
      Fixture.await("a renewal stalled", Duration.ofSeconds(5), () -> pool.stalled() == 1);
      int before = renewals.get();
      // beyond the local deadline (1 s): only renewals after the stalled one can keep the lease
      long until = System.nanoTime() + Duration.ofMillis(1_500).toNanos();
      while (System.nanoTime() < until && !lease.isLost()) {
        Thread.sleep(20); // polling a bounded wait, not a synchronisation
      }
      return lease.isHeld() && renewals.get() - before >= 5;
    } finally {
      pool.unstall();
    }
  }

  @OnEveryDatabase
  void aClaimWhoseBorrowBlocksFailsAfterTheAttemptTimeout(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource pool = new FailingDataSource(f.pool(2));
      LeaseManager m = manager(f, pool, "claimer", null, new LeaseListener() {});
      pool.stall(0, 1);
      long start = System.nanoTime();
      LeaseException e = assertThrows(LeaseException.class, () -> m.tryClaim("blocked"));
      long tookMs = Duration.ofNanos(System.nanoTime() - start).toMillis();
      pool.unstall();
      assertTrue(e.getMessage().contains("attempt timeout of 300 ms"), e.getMessage());
      assertTrue(tookMs >= 290 && tookMs < 2_000, "gave up after the attempt timeout: " + tookMs);

      FailingDataSource stuck = new FailingDataSource(f.pool(2));
      LeaseManager unbounded =
          manager(
              f, stuck, "unbounded", WeakenedLifecycle.unboundedAttempt(), new LeaseListener() {});
      stuck.stall(0, 1);
      CompletableFuture<Object> claim =
          CompletableFuture.supplyAsync(() -> unbounded.tryClaim("blocked-for-good"));
      Thread.sleep(700); // a bounded look for an answer that must not come, not a synchronisation
      assertFalse(claim.isDone(), "negative control: the unbounded claim still waits");
      stuck.unstall();
      claim.get(10, TimeUnit.SECONDS);
    }
  }
}
