package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Work under a lease: interrupted on loss, the failure policy after the grace period when it will
 * not stop (never the halting default here), its exception back with its stack, and the one-call
 * runner.
 */
class WorkUnderLeaseTest {

  private static final long GRACE_MS = 300;

  /** For the work that will not stop: the failure policy is expected after this grace. */
  private static final LeaseTimings TIMINGS = Fixture.timings(1_000, 100, 500, 300, GRACE_MS);

  /** For work that stops: a grace no scheduling stall on a loaded machine exceeds. */
  private static final LeaseTimings STOPS = Fixture.timings(1_000, 100, 500, 300, 3_000);

  /** Where the loss is not the subject: a stall of a few seconds must not end the lease. */
  private static final LeaseTimings RELAXED = Fixture.timings(10_000, 100, 5_000, 2_000, 3_000);

  /**
   * Runs runUnder on another thread, so the test can act while the work runs; returns once the work
   * has started.
   */
  private static CompletableFuture<Object> runUnderAsync(
      LeaseManager m, Lease lease, LeaseWork<Object> work) throws InterruptedException {
    CompletableFuture<Object> done = new CompletableFuture<>();
    CountDownLatch started = new CountDownLatch(1);
    Thread t =
        new Thread(
            () -> {
              try {
                done.complete(
                    m.runUnder(
                        lease,
                        l -> {
                          started.countDown();
                          return work.run(l);
                        }));
              } catch (Throwable e) {
                done.completeExceptionally(e);
              }
            },
            "run-under");
    t.setDaemon(true);
    t.start();
    assertTrue(started.await(5, TimeUnit.SECONDS), "the work started");
    return done;
  }

  private static Throwable failureOf(CompletableFuture<Object> done) throws Exception {
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> done.get(10, TimeUnit.SECONDS));
    return e.getCause();
  }

  @OnEveryDatabase
  void workIsInterruptedWhenRenewalsStop(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      AtomicLong lostAt = new AtomicLong();
      LeaseManager m =
          f.track(
              f.builder(failing, "worker")
                  .timings(STOPS)
                  .listener(Fixture.onLost(l -> lostAt.set(System.nanoTime())))
                  .build());
      Lease lease = m.tryClaim("work").orElseThrow();
      AtomicLong interruptedAt = new AtomicLong();
      CompletableFuture<Object> done =
          runUnderAsync(
              m,
              lease,
              l -> {
                try {
                  new CountDownLatch(1).await(); // blocks until interrupted
                } finally {
                  interruptedAt.set(System.nanoTime());
                }
                return "finished";
              });
      long outage = System.nanoTime();
      failing.failing(true);
      Throwable failure = failureOf(done);
      assertInstanceOf(LeaseLostException.class, failure);
      assertSame(lease, ((LeaseLostException) failure).lease());
      assertInstanceOf(InterruptedException.class, failure.getCause(), "the work's own exception");
      assertEquals(Optional.of(LossReason.LOCAL_DEADLINE), lease.lossReason());
      long reactionMs = Duration.ofNanos(interruptedAt.get() - outage).toMillis();
      assertTrue(
          reactionMs <= 500 + 1_000,
          "interrupted " + reactionMs + " ms into the outage (local deadline 500 ms)");
      Fixture.await("the lost() listener", Duration.ofSeconds(2), () -> lostAt.get() != 0);
      assertTrue(f.failurePolicyCalls.isEmpty(), "work that stopped: " + f.failurePolicyCalls);
      failing.failing(false);
    }
  }

  /** The database ends the lease (its row taken over after it was forced to expire). */
  @OnEveryDatabase
  void workIsInterruptedWhenAnotherManagerTakesTheLeaseOver(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("worker", RELAXED);
      LeaseManager thief = f.manager("thief", RELAXED);
      Lease lease = m.tryClaim("work").orElseThrow();
      AtomicInteger loops = new AtomicInteger();
      CompletableFuture<Object> done =
          runUnderAsync(
              m,
              lease,
              l -> {
                while (!Thread.currentThread().isInterrupted()) {
                  loops.incrementAndGet();
                  Thread.onSpinWait();
                }
                return "stopped";
              });
      expireNow(f, "work");
      Lease stolen = thief.tryClaim("work").orElseThrow();
      Throwable failure = failureOf(done);
      assertInstanceOf(LeaseLostException.class, failure);
      assertEquals(Optional.of(LossReason.NOT_HELD), lease.lossReason());
      assertTrue(stolen.term() > lease.term());
      assertTrue(f.failurePolicyCalls.isEmpty(), "work that stopped: " + f.failurePolicyCalls);
    }
  }

  /**
   * A listener that is slow in lost() (here: blocked until the test sees the work interrupted) must
   * not hold back the interrupt: stopping the work is what keeps a lost holder from acting.
   */
  @OnEveryDatabase
  void workIsInterruptedBeforeASlowLossListenerReturns(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      CountDownLatch listenerMayReturn = new CountDownLatch(1);
      LeaseManager m =
          f.track(
              f.builder(failing, "slow-listener")
                  .timings(STOPS)
                  .listener(
                      new LeaseListener() {
                        @Override
                        public void lost(Lease lease, LossReason reason) {
                          try {
                            listenerMayReturn.await(5, TimeUnit.SECONDS);
                          } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                          }
                        }
                      })
                  .build());
      Lease lease = m.tryClaim("slow-listener").orElseThrow();
      CountDownLatch interrupted = new CountDownLatch(1);
      CompletableFuture<Object> done =
          runUnderAsync(
              m,
              lease,
              l -> {
                try {
                  new CountDownLatch(1).await();
                } finally {
                  interrupted.countDown();
                }
                return null;
              });
      failing.failing(true);
      try {
        assertTrue(
            interrupted.await(3, TimeUnit.SECONDS),
            "the work was interrupted while the listener was still busy");
      } finally {
        listenerMayReturn.countDown();
      }
      assertInstanceOf(LeaseLostException.class, failureOf(done));
      failing.failing(false);
    }
  }

  @OnEveryDatabase
  void workThatWillNotStopTriggersTheFailurePolicyAfterTheGrace(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      FailingDataSource failing = new FailingDataSource(f.pool(2));
      AtomicLong lostAt = new AtomicLong();
      AtomicLong policyAt = new AtomicLong();
      AtomicReference<Thread> policyWorker = new AtomicReference<>();
      AtomicBoolean release = new AtomicBoolean();
      CountDownLatch policyRan = new CountDownLatch(1);
      LeaseManager m =
          f.track(
              f.builder(failing, "stubborn")
                  .timings(TIMINGS)
                  .listener(Fixture.onLost(l -> lostAt.set(System.nanoTime())))
                  .failurePolicy(
                      (lease, worker) -> {
                        policyAt.set(System.nanoTime());
                        policyWorker.set(worker);
                        policyRan.countDown();
                        release.set(true); // let the stubborn work end, so the test can finish
                        worker.interrupt();
                      })
                  .build());
      Lease lease = m.tryClaim("stubborn").orElseThrow();
      AtomicInteger ignored = new AtomicInteger();
      AtomicReference<Thread> workThread = new AtomicReference<>();
      CompletableFuture<Object> done =
          runUnderAsync(
              m,
              lease,
              l -> {
                workThread.set(Thread.currentThread());
                Fixture.ignoringInterrupts(release::get, ignored::incrementAndGet);
                return "ended";
              });
      failing.failing(true);
      assertTrue(policyRan.await(5, TimeUnit.SECONDS), "the failure policy ran");
      long afterLossMs = Duration.ofNanos(policyAt.get() - lostAt.get()).toMillis();
      assertTrue(
          afterLossMs >= GRACE_MS - 5 && afterLossMs < GRACE_MS + 2_000,
          "policy ran " + afterLossMs + " ms after the loss (grace " + GRACE_MS + " ms)");
      assertSame(workThread.get(), policyWorker.get());
      assertTrue(ignored.get() >= 1, "the work was interrupted and ignored it");
      assertInstanceOf(LeaseLostException.class, failureOf(done));
      failing.failing(false);
    }
  }

  /**
   * The caller of runUnder is interrupted and gives up on work that ignores the interrupt. That is
   * not a loss: the lease stays held (and renewed), so the work is still fenced by it, and no
   * failure policy runs; the release that usually follows stops the work first (another grace
   * period) and then gives the row back, still without the policy. Negative control: the old
   * behaviour (POLICY_ON_RELEASE: the policy for work that will not stop when the caller gives up
   * or a release does) is caught by the policy count.
   */
  @OnEveryDatabase
  void callerGivingUpOnWorkThatWillNotStopIsNotALoss(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(0, stubbornWorkAfterTheCallerGaveUp(f, false), "no failure policy");
      assertEquals(
          2,
          stubbornWorkAfterTheCallerGaveUp(f, true),
          "negative control: the broken variant runs the policy (it would halt the JVM)");
    }
  }

  /** Returns how often the failure policy ran. */
  private static int stubbornWorkAfterTheCallerGaveUp(Fixture f, boolean broken) throws Exception {
    AtomicBoolean release = new AtomicBoolean();
    AtomicInteger policies = new AtomicInteger();
    LeaseManager.Builder b =
        f.builder(f.pool(2), "caller-" + broken)
            .timings(Fixture.timings(10_000, 100, 5_000, 2_000, 300))
            .failurePolicy((lease, worker) -> policies.incrementAndGet());
    if (broken) {
      WeakenedLifecycle.policyOnRelease().and(WeakenedLifecycle.policyNotOnce()).applyTo(b);
    }
    LeaseManager m = f.track(b.build());
    Lease lease = m.tryClaim("caller-" + broken).orElseThrow();
    CountDownLatch started = new CountDownLatch(1);
    AtomicReference<Throwable> callerSaw = new AtomicReference<>();
    Thread caller =
        new Thread(
            () -> {
              try {
                m.runUnder(lease, Fixture.stubbornWork(started, release::get));
              } catch (Throwable t) {
                callerSaw.set(t);
              }
            });
    caller.start();
    assertTrue(started.await(5, TimeUnit.SECONDS));
    caller.interrupt();
    caller.join(10_000);
    assertFalse(caller.isAlive());
    assertInstanceOf(InterruptedException.class, callerSaw.get());
    assertTrue(lease.isHeld(), "the caller giving up is not a loss: the lease stays held");
    long before = System.nanoTime();
    lease.release(); // stops the work first: it will not, so the release waits out the grace
    long tookMs = Duration.ofNanos(System.nanoTime() - before).toMillis();
    assertTrue(tookMs >= 290, "the release waited the grace period for the work: " + tookMs);
    assertTrue(lease.isReleased());
    assertEquals(0, f.row("caller-" + broken).expiresAtMs(), "released after the grace");
    release.set(true);
    return policies.get();
  }

  @OnEveryDatabase
  void exceptionInTheWorkComesBackWithItsStack(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = f.manager("thrower", RELAXED);
      Lease lease = m.tryClaim("throws").orElseThrow();
      LeaseWorkException e =
          assertThrows(LeaseWorkException.class, () -> m.runUnder(lease, l -> failingStep()));
      IOException cause = assertInstanceOf(IOException.class, e.getCause());
      assertEquals("disk on fire", cause.getMessage());
      assertTrue(
          Arrays.stream(cause.getStackTrace())
              .anyMatch(s -> s.getMethodName().equals("failingStep")),
          "the work's own stack: " + Arrays.toString(cause.getStackTrace()));
      assertTrue(lease.isHeld(), "the lease stays held after its work failed");
      assertEquals(
          Integer.valueOf(42), m.runUnder(lease, l -> 42), "runUnder returns the work's value");
      lease.release();
    }
  }

  private static Object failingStep() throws IOException {
    throw new IOException("disk on fire");
  }

  @OnEveryDatabase
  void runIfFreeRunsOnlyWhenFreeAndReleasesAfterwards(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager a = f.manager("a", RELAXED);
      LeaseManager b = f.manager("b", RELAXED);
      AtomicInteger ran = new AtomicInteger();

      Lease held = b.tryClaim("job").orElseThrow();
      assertFalse(a.runIfFree("job", l -> ran.incrementAndGet()), "held elsewhere");
      assertEquals(0, ran.get(), "the work did not run");
      held.release();

      AtomicReference<Lease> bound = new AtomicReference<>();
      AtomicLong boundTerm = new AtomicLong();
      assertTrue(
          a.runIfFree(
              "job",
              l -> {
                ran.incrementAndGet();
                bound.set(LeaseContext.current().orElseThrow());
                boundTerm.set(LeaseContext.currentTerm().orElseThrow());
                assertSame(l, bound.get());
                assertTrue(l.isHeld());
                return null;
              }),
          "free");
      assertEquals(1, ran.get());
      assertTrue(boundTerm.get() > held.term());
      assertTrue(bound.get().isReleased(), "released after the work");
      assertTrue(LeaseContext.current().isEmpty(), "nothing bound on the caller's thread");
      Lease next = b.tryClaim("job").orElseThrow(() -> new AssertionError("released at once"));
      next.release();

      assertThrows(LeaseWorkException.class, () -> a.runIfFree("job", l -> failingStep()));
      assertTrue(b.tryClaim("job").isPresent(), "released after the work failed");
    }
  }

  /** Makes the row expire now, as if its holder had stopped renewing long ago. */
  private static void expireNow(Fixture f, String name) throws SQLException {
    try (Connection c = f.admin.getConnection();
        PreparedStatement ps =
            c.prepareStatement("UPDATE " + f.table + " SET expires_at_ms = 0 WHERE name = ?")) {
      ps.setString(1, name);
      assertEquals(1, ps.executeUpdate());
    }
  }
}
