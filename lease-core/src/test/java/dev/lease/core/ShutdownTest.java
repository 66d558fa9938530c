package dev.lease.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.testing.FailingDataSource;
import dev.lease.testing.OnEveryDatabase;
import dev.lease.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The end of a lease at shutdown and on release: the work under it is stopped before the row is
 * given back; a closed manager hands out nothing; shutdown never runs the failure policy, a loss
 * runs it once even when close() stopped the keeper's scheduler. Every test has a negative control
 * that builds the manager with the old, broken mechanism ({@link WeakenedLifecycle}) and shows the
 * test catches it.
 */
class ShutdownTest {

  /** Short protocol timings; the grace is what a release waits for work that will not stop. */
  private static final LeaseTimings TIMINGS = Fixture.timings(10_000, 100, 5_000, 2_000, 300);

  private static LeaseManager manager(Fixture f, String instance, WeakenedLifecycle fault) {
    return f.build(f.builder(f.pool(3), instance).timings(TIMINGS), fault);
  }

  /** True if the row of {@code lease} is still its claim, unexpired, by the database clock. */
  private static boolean rowStillHeldBy(Fixture f, Lease lease) {
    Fixture.Row row = f.row(lease.name());
    return row.holder().equals(lease.holder())
        && row.term() == lease.term()
        && row.expiresAtMs() > System.currentTimeMillis() - 60_000; // released rows expire at 0
  }

  /**
   * Work that, when interrupted, records whether its lease row was still its own at that moment.
   */
  private static LeaseWork<Object> recordingWork(
      Fixture f, CountDownLatch started, AtomicReference<Boolean> rowHeldAtInterrupt) {
    return lease -> {
      started.countDown();
      try {
        new CountDownLatch(1).await();
      } catch (InterruptedException e) {
        rowHeldAtInterrupt.set(rowStillHeldBy(f, lease));
        throw e;
      }
      return null;
    };
  }

  /** Runs {@code work} on this thread bound to {@code lease}: what {@code end()} said. */
  private static Object endOfBoundWork(Lease lease, LeaseWork<Object> work) {
    CallerWork bound = LeaseInternals.bindCurrentThread(lease);
    try {
      work.run(lease);
    } catch (Exception interrupted) {
      // the release interrupted it
    }
    return bound.end();
  }

  private static Throwable failureOf(CompletableFuture<?> done) {
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> done.get(15, TimeUnit.SECONDS));
    return e.getCause();
  }

  private static <T> CompletableFuture<T> async(String name, Callable<T> body) {
    CompletableFuture<T> done = new CompletableFuture<>();
    Thread t =
        new Thread(
            () -> {
              try {
                done.complete(body.call());
              } catch (Throwable e) {
                done.completeExceptionally(e);
              }
            },
            name);
    t.setDaemon(true);
    t.start();
    return done;
  }

  @FunctionalInterface
  interface Callable<T> {
    T call() throws Exception;
  }

  // ---- 1. a release stops the work first -----------------------------------------------------

  @OnEveryDatabase
  void releaseStopsTheWorkBeforeItGivesTheRowBack(TestDatabase db) throws Exception {
    Fixture.assertControlled(
        db,
        (f, fault) -> rowHeldWhenTheReleaseInterrupted(f, fault, false),
        true,
        "the work was interrupted while the row was still its own",
        WeakenedLifecycle.releaseBeforeStoppingWork(),
        false,
        "releasing first hands the row over while the work still runs");
  }

  /**
   * A lease's work, run by {@code runUnder} or ({@code boundCaller}) on a caller's own thread bound
   * to the lease ({@link CallerThreadWorkTest}), is interrupted by a release: whether the row was
   * still the lease's when it was.
   */
  static boolean rowHeldWhenTheReleaseInterrupted(
      Fixture f, WeakenedLifecycle fault, boolean boundCaller) throws Exception {
    LeaseManager m = manager(f, "releasing-" + fault, fault);
    Lease lease = m.tryClaim((boundCaller ? "caller-" : "release-") + fault).orElseThrow();
    CountDownLatch started = new CountDownLatch(1);
    AtomicReference<Boolean> rowHeld = new AtomicReference<>();
    LeaseWork<Object> work = recordingWork(f, started, rowHeld);
    CompletableFuture<Object> done =
        boundCaller
            ? async("bound-caller", () -> endOfBoundWork(lease, work))
            : async("run-under", () -> m.runUnder(lease, work));
    assertTrue(started.await(5, TimeUnit.SECONDS));
    lease.release();
    if (boundCaller) {
      assertEquals(true, done.get(15, TimeUnit.SECONDS), "end() says the release stopped it");
    } else {
      LeaseReleasedException e = assertInstanceOf(LeaseReleasedException.class, failureOf(done));
      assertTrue(e.workStopped(), "the work ended within the grace period");
    }
    assertTrue(lease.isReleased());
    assertEquals(0, f.row(lease.name()).expiresAtMs(), "then the row was given back");
    return rowHeld.get();
  }

  /**
   * close() from a shutdown hook while runIfFree runs: the work is interrupted and ends first,
   * runIfFree says so (LeaseReleasedException, not true), then the row is released so another
   * process claims the next term at once.
   */
  @OnEveryDatabase
  void closeStopsRunIfFreeWorkBeforeItReleases(TestDatabase db) throws Exception {
    Fixture.assertControlled(
        db,
        ShutdownTest::rowHeldWhenCloseInterrupted,
        true,
        "as shipped",
        WeakenedLifecycle.releaseBeforeStoppingWork(),
        false,
        "close released the row before it stopped the work");
  }

  private static boolean rowHeldWhenCloseInterrupted(Fixture f, WeakenedLifecycle fault)
      throws Exception {
    LeaseManager m = manager(f, "closing-" + fault, fault);
    LeaseManager other = manager(f, "successor-" + fault, null);
    String name = "billing-" + fault;
    CountDownLatch started = new CountDownLatch(1);
    AtomicReference<Boolean> rowHeld = new AtomicReference<>();
    AtomicReference<Lease> ran = new AtomicReference<>();
    CompletableFuture<Boolean> done =
        async(
            "run-if-free",
            () ->
                m.runIfFree(
                    name,
                    lease -> {
                      ran.set(lease);
                      return recordingWork(f, started, rowHeld).run(lease);
                    }));
    assertTrue(started.await(5, TimeUnit.SECONDS));
    m.close();
    LeaseReleasedException e = assertInstanceOf(LeaseReleasedException.class, failureOf(done));
    assertTrue(e.workStopped());
    Lease successor = other.tryClaim(name).orElseThrow(() -> new AssertionError("released"));
    assertTrue(successor.term() > ran.get().term());
    successor.release();
    return rowHeld.get();
  }

  // ---- 2. a closed manager hands out nothing ---------------------------------------------------

  @OnEveryDatabase
  void aClosedManagerRefusesClaimsHoldsAndWork(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      LeaseManager m = manager(f, "closed", null);
      Lease unheld = m.tryClaim("before-close").orElseThrow();
      m.close();
      IllegalStateException claim =
          assertThrows(IllegalStateException.class, () -> m.tryClaim("after-close"));
      assertTrue(claim.getMessage().contains("is closed"), claim.getMessage());
      assertTrue(claim.getMessage().contains("build a new LeaseManager"), claim.getMessage());
      assertThrows(IllegalStateException.class, unheld::hold);
      assertThrows(IllegalStateException.class, () -> m.runUnder(unheld, l -> null));
      assertThrows(IllegalStateException.class, () -> m.runIfFree("after-close", l -> null));
      assertEquals(null, f.row("after-close"), "no statement ran");

      LeaseManager broken = manager(f, "broken", WeakenedLifecycle.noClosedCheck());
      broken.close();
      assertTrue(
          broken.tryClaim("after-close").isPresent(),
          "negative control: without the check a closed manager hands out a lease");
    }
  }

  /**
   * A claim in flight when close() runs (its connection borrow blocked until close returned): the
   * claim completes in the database afterwards, and is released instead of handed out.
   */
  @OnEveryDatabase
  void aClaimThatCompletesAfterCloseBeganIsReleasedNotHandedOut(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      Throwable refused = claimRacingClose(f, null);
      IllegalStateException e = assertInstanceOf(IllegalStateException.class, refused);
      assertTrue(e.getMessage().contains("was released, not handed out"), e.getMessage());
      Fixture.Row row = f.row("race-null");
      assertEquals(0, row.expiresAtMs(), "the late claim was released");
      assertEquals("racing-null", row.instance(), "it was claimed, after close began");

      Throwable handedOut = claimRacingClose(f, WeakenedLifecycle.noClosedCheck());
      assertEquals(null, handedOut, "negative control: the racing claim was handed out");
      assertTrue(
          f.row("race-NO_CLOSED_CHECK").expiresAtMs() > 0,
          "and left claimed with nothing to renew or release it");
    }
  }

  /** Returns what tryClaim threw, or null if it handed out a lease. */
  private static Throwable claimRacingClose(Fixture f, WeakenedLifecycle fault) throws Exception {
    FailingDataSource gate = new FailingDataSource(f.pool(2));
    LeaseManager.Builder b = f.builder(gate, "racing-" + fault).timings(TIMINGS);
    LeaseManager m = f.build(b, fault);
    gate.stall(0, 1); // the claim's first borrow blocks until close() returned
    CompletableFuture<Lease> claim =
        async("claim", () -> m.tryClaim("race-" + fault).orElseThrow());
    Fixture.await("the claim in flight", Duration.ofSeconds(5), () -> gate.stalled() == 1);
    m.close();
    gate.unstall();
    try {
      claim.get(15, TimeUnit.SECONDS);
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    }
  }

  /**
   * A lease lost with work that will not stop, and close() right after the loss (it shuts the
   * keeper's scheduler down): the failure policy still runs after the grace period, since the grace
   * is timed on the loss-handling threads.
   */
  @OnEveryDatabase
  void theFailurePolicyRunsAfterALossEvenWhenCloseStoppedTheKeeper(TestDatabase db)
      throws Exception {
    Fixture.assertControlled(
        db,
        ShutdownTest::policyAfterLossAndClose,
        true,
        "the failure policy ran",
        WeakenedLifecycle.graceOnKeeperScheduler(),
        false,
        "a grace timed on the keeper's scheduler dies with close()");
  }

  private static boolean policyAfterLossAndClose(Fixture f, WeakenedLifecycle fault)
      throws Exception {
    FailingDataSource failing = new FailingDataSource(f.pool(2));
    CountDownLatch lost = new CountDownLatch(1);
    CountDownLatch policy = new CountDownLatch(1);
    AtomicBoolean release = new AtomicBoolean();
    LeaseManager.Builder b =
        f.builder(failing, "stuck-" + fault)
            .timings(Fixture.timings(1_000, 100, 500, 300, 300))
            .listener(Fixture.onLost(l -> lost.countDown()))
            .failurePolicy((lease, worker) -> policy.countDown());
    LeaseManager m = f.build(b, fault);
    Lease lease = m.tryClaim("stuck-" + fault).orElseThrow();
    CountDownLatch started = new CountDownLatch(1);
    CompletableFuture<Object> done =
        async("run-under", () -> m.runUnder(lease, Fixture.stubbornWork(started, release::get)));
    assertTrue(started.await(5, TimeUnit.SECONDS));
    failing.failing(true);
    assertTrue(lost.await(5, TimeUnit.SECONDS), "the lease was lost");
    m.close();
    boolean ran = policy.await(1_000, TimeUnit.MILLISECONDS);
    release.set(true);
    failing.failing(false);
    assertInstanceOf(LeaseLostException.class, failureOf(done));
    return ran;
  }

  // ---- 3. shutdown is not a loss; the policy runs at most once ----------------------------------

  /**
   * close() while work that will not stop runs under a lease: close waits the grace period,
   * releases anyway, and never runs the failure policy (whose default halts the JVM, skipping every
   * other shutdown hook). The work's runIfFree learns that the work did not stop.
   */
  @OnEveryDatabase
  void closeWithWorkThatWillNotStopNeverRunsTheFailurePolicy(TestDatabase db) throws Exception {
    try (Fixture f = new Fixture(db)) {
      assertEquals(List.of(), policyCallsOnCloseWithStuckWork(f, null));
      assertEquals(
          1,
          policyCallsOnCloseWithStuckWork(f, WeakenedLifecycle.policyOnRelease()).size(),
          "negative control: the old shutdown ran the policy (and halted the JVM by default)");
    }
  }

  private static List<String> policyCallsOnCloseWithStuckWork(Fixture f, WeakenedLifecycle fault)
      throws Exception {
    List<String> calls = new CopyOnWriteArrayList<>();
    LeaseManager.Builder b =
        f.builder(f.pool(2), "shutdown-" + fault)
            .timings(TIMINGS)
            .failurePolicy((lease, worker) -> calls.add(lease.name()));
    LeaseManager m = f.build(b, fault);
    CountDownLatch started = new CountDownLatch(1);
    AtomicBoolean release = new AtomicBoolean();
    String name = "shutdown-" + fault;
    CompletableFuture<Boolean> done =
        async("run-if-free", () -> m.runIfFree(name, Fixture.stubbornWork(started, release::get)));
    assertTrue(started.await(5, TimeUnit.SECONDS));
    long before = System.nanoTime();
    m.close();
    long tookMs = Duration.ofNanos(System.nanoTime() - before).toMillis();
    assertTrue(tookMs >= 290 && tookMs < 5_000, "close waited the grace period: " + tookMs);
    LeaseReleasedException e = assertInstanceOf(LeaseReleasedException.class, failureOf(done));
    assertFalse(e.workStopped(), "the work did not stop");
    assertEquals(0, f.row(name).expiresAtMs(), "released anyway");
    release.set(true);
    return calls;
  }

  /** Two works under one lease, neither stops after the loss: the failure policy runs once. */
  @OnEveryDatabase
  void theFailurePolicyRunsAtMostOncePerLease(TestDatabase db) throws Exception {
    Fixture.assertControlled(
        db,
        ShutdownTest::policyCallsForTwoStuckWorks,
        1,
        "as shipped",
        WeakenedLifecycle.policyNotOnce(),
        2,
        "without the once-per-lease guard the policy runs per work");
  }

  private static int policyCallsForTwoStuckWorks(Fixture f, WeakenedLifecycle fault)
      throws Exception {
    FailingDataSource failing = new FailingDataSource(f.pool(2));
    List<String> calls = new CopyOnWriteArrayList<>();
    CountDownLatch expected = new CountDownLatch(fault == null ? 1 : 2);
    LeaseManager.Builder b =
        f.builder(failing, "twice-" + fault)
            .timings(Fixture.timings(1_000, 100, 500, 300, 300))
            .failurePolicy(
                (lease, worker) -> {
                  calls.add(worker.getName());
                  expected.countDown();
                });
    LeaseManager m = f.build(b, fault);
    Lease lease = m.tryClaim("twice-" + fault).orElseThrow();
    CountDownLatch started = new CountDownLatch(2);
    AtomicBoolean release = new AtomicBoolean();
    CompletableFuture<Object> one =
        async("one", () -> m.runUnder(lease, Fixture.stubbornWork(started, release::get)));
    CompletableFuture<Object> two =
        async("two", () -> m.runUnder(lease, Fixture.stubbornWork(started, release::get)));
    assertTrue(started.await(5, TimeUnit.SECONDS));
    failing.failing(true);
    assertTrue(expected.await(5, TimeUnit.SECONDS), "the policy ran: " + calls);
    // a second call would come right after the first (both works wait out the same grace)
    Thread.sleep(300); // a bounded look for a call that must not come, not a synchronisation
    release.set(true);
    failing.failing(false);
    assertInstanceOf(LeaseLostException.class, failureOf(one));
    assertInstanceOf(LeaseLostException.class, failureOf(two));
    return calls.size();
  }
}
