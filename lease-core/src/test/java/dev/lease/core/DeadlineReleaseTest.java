package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * A lease lost at its local deadline is released (best effort, holder and term checked in the
 * statement), so a successor claims it at once instead of waiting for it to expire. The process
 * clock is stepped past the local deadline while the database still has the lease for seconds.
 * Negative control: without the release the successor finds the lease held.
 */
class DeadlineReleaseTest {

  /** A long lease: without the release, the row stays claimed for about 10 s. */
  private static final LeaseTimings TIMINGS = Fixture.timings(10_000, 1_000, 5_000, 1_000, 300);

  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void aLeaseLostAtItsLocalDeadlineIsReleased(TestDatabase db) throws Exception {
    Fixture.assertControlled(
        db,
        DeadlineReleaseTest::successorClaimsAtOnce,
        true,
        "the successor claimed at once",
        WeakenedLifecycle.noReleaseAtDeadline(),
        false,
        "without the release the successor waits out the lease");
  }

  private static boolean successorClaimsAtOnce(Fixture f, WeakenedLifecycle fault)
      throws Exception {
    AtomicLong skew = new AtomicLong();
    LeaseManager.Builder b =
        f.builder(f.pool(2), "paused-" + fault)
            .timings(TIMINGS)
            .clock(() -> System.nanoTime() + skew.get());
    LeaseManager m = f.build(b, fault);
    LeaseManager successor = f.manager("successor-" + fault, TIMINGS);
    String name = "deadline-" + fault;
    Lease lease = m.tryClaim(name).orElseThrow().hold();
    skew.addAndGet(Duration.ofSeconds(6).toNanos()); // a pause longer than the local deadline
    assertFalse(lease.isHeld());
    assertEquals(Optional.of(LossReason.LOCAL_DEADLINE), lease.lossReason());
    long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
    while (System.nanoTime() < until) {
      Optional<Lease> next = successor.tryClaim(name);
      if (next.isPresent()) {
        assertTrue(next.get().term() > lease.term());
        next.get().release();
        return true;
      }
      Thread.sleep(50); // polling a bounded wait, not a synchronisation
    }
    assertTrue(f.row(name).expiresAtMs() > 0, "still claimed by the lost lease");
    return false;
  }

  /**
   * Work under the lease that stops when interrupted: the release waits for it to end first (the
   * order of every end of a lease); work that does not stop keeps the row claimed, the failure
   * policy decides.
   */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void theReleaseAfterADeadlineLossWaitsForTheWorkAndNeverForStuckWork(TestDatabase db)
      throws Exception {
    try (Fixture f = new Fixture(db)) {
      AtomicLong skew = new AtomicLong();
      CountDownLatch policy = new CountDownLatch(1);
      LeaseManager m =
          f.track(
              f.builder(f.pool(2), "worker")
                  .timings(TIMINGS)
                  .clock(() -> System.nanoTime() + skew.get())
                  .failurePolicy((lease, worker) -> policy.countDown())
                  .build());
      Lease lease = m.tryClaim("stuck").orElseThrow();
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch done = new CountDownLatch(1);
      Thread caller =
          new Thread(
              () -> {
                try {
                  long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                  m.runUnder(
                      lease,
                      Fixture.stubbornWork(
                          started, () -> done.getCount() == 0 || System.nanoTime() >= end));
                } catch (Exception e) {
                  // expected: lost
                }
              });
      caller.start();
      assertTrue(started.await(5, TimeUnit.SECONDS));
      skew.addAndGet(Duration.ofSeconds(6).toNanos());
      assertFalse(lease.isHeld());
      assertTrue(policy.await(5, TimeUnit.SECONDS), "the policy ran for the stuck work");
      assertTrue(f.row("stuck").expiresAtMs() > 0, "and the row was not released under it");
      done.countDown();
      caller.join(5_000);
    }
  }

  /** The database is unreachable at the deadline: the release fails quietly, nothing waits. */
  @Execution(ExecutionMode.CONCURRENT) // waits on protocol timings: database runs side by side
  @OnEveryDatabase
  void theReleaseIsBestEffortWhenTheDatabaseIsUnreachable(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      AtomicLong skew = new AtomicLong();
      CountDownLatch lost = new CountDownLatch(1);
      LeaseManager m =
          f.track(
              f.builder(failing, "unreachable")
                  .timings(TIMINGS)
                  .clock(() -> System.nanoTime() + skew.get())
                  .listener(Fixture.onLost(l -> lost.countDown()))
                  .build());
      Lease lease = m.tryClaim("unreachable").orElseThrow().hold();
      failing.failing(true);
      int refusedBefore = failing.refused();
      skew.addAndGet(Duration.ofSeconds(6).toNanos());
      long start = System.nanoTime();
      assertFalse(lease.isHeld(), "the loss is declared at once, whatever the database does");
      assertTrue(Duration.ofNanos(System.nanoTime() - start).toMillis() < 500);
      assertTrue(lost.await(5, TimeUnit.SECONDS));
      Fixture.await(
          "the release attempt", Duration.ofSeconds(5), () -> failing.refused() > refusedBefore);
      failing.failing(false);
      assertTrue(f.row("unreachable").expiresAtMs() > 0, "not released: it expires by itself");
    }
  }
}
