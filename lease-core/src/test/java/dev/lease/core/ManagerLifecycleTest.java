package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;

/** Closing a manager releases what it holds and stops only the threads it made. */
class ManagerLifecycleTest {

  private static final LeaseTimings TIMINGS = Fixture.timings(2_000, 100, 1_000, 500, 200);

  @OnEveryDatabase
  void closeReleasesTheLeasesItHolds(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("closing", TIMINGS);
      LeaseManager other = f.manager("other", TIMINGS);
      Lease held = m.tryClaim("held").orElseThrow().hold();
      Lease plain = m.tryClaim("plain").orElseThrow();
      Lease released = m.tryClaim("released").orElseThrow();
      released.release();
      m.close();
      assertTrue(held.isReleased());
      assertTrue(plain.isReleased());
      assertEquals(0, f.row("held").expiresAtMs());
      assertEquals(0, f.row("plain").expiresAtMs());
      assertTrue(other.tryClaim("held").isPresent(), "claimable at once");
      assertTrue(other.tryClaim("plain").isPresent(), "claimable at once");
    }
  }

  @OnEveryDatabase
  void closeLeavesTheExecutorsItWasGivenRunning(TestDatabase db) {
    ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
    ExecutorService attempts = Executors.newCachedThreadPool();
    try (Fixture f = new Fixture(db)) {
      AtomicInteger renewals = new AtomicInteger();
      LeaseManager m =
          f.track(
              f.builder(f.pool(2), "given")
                  .timings(TIMINGS)
                  .scheduler(scheduler)
                  .attemptExecutor(attempts)
                  .listener(Fixture.onRenewed(l -> renewals.incrementAndGet()))
                  .build());
      m.tryClaim("given").orElseThrow().hold();
      Fixture.await(
          "renewals on the given executors", Duration.ofSeconds(5), () -> renewals.get() >= 2);
      m.close();
      assertFalse(scheduler.isShutdown(), "the caller's scheduler");
      assertFalse(attempts.isShutdown(), "the caller's attempt executor");
    } finally {
      scheduler.shutdownNow();
      attempts.shutdownNow();
    }
  }

  /** Only an attempt executor given (any Executor, not necessarily an ExecutorService). */
  @OnEveryDatabase
  void closeWorksWithAPlainAttemptExecutor(TestDatabase db) {
    try (Fixture f = new Fixture(db)) {
      AtomicInteger renewals = new AtomicInteger();
      LeaseManager m =
          f.track(
              f.builder(f.pool(2), "plain-executor")
                  .timings(TIMINGS)
                  .attemptExecutor(Runnable::run)
                  .listener(Fixture.onRenewed(l -> renewals.incrementAndGet()))
                  .build());
      Lease lease = m.tryClaim("plain-executor").orElseThrow().hold();
      Fixture.await("renewals", Duration.ofSeconds(5), () -> renewals.get() >= 2);
      assertDoesNotThrow(m::close);
      assertTrue(lease.isReleased());
    }
  }
}
