package dev.lease.core;

import dev.lease.core.internal.CallerWork;
import dev.lease.core.internal.LifecycleRules;
import java.util.Objects;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Work under a {@link LeaseManager}'s leases: runs it on a thread of its own bound to the lease
 * ({@link LeaseManager#runUnder}), or binds the calling thread to it, so that the end of the lease
 * (release, close, loss) interrupts the work and waits for it (see {@link Releases}).
 */
final class WorkRunner {

  // the manager's logger: operators filter on it, whichever class of the manager logs
  private static final Logger log = LoggerFactory.getLogger(LeaseManager.class);

  private final LeaseManager manager;
  private final Releases releases;
  private final LeaseTimings timings;
  private final LifecycleRules rules;
  private final ThreadFactory workThreads;
  private final Consumer<Lease> afterWork;

  WorkRunner(
      LeaseManager manager,
      Releases releases,
      LeaseTimings timings,
      LifecycleRules rules,
      ThreadFactory workThreads,
      Consumer<Lease> afterWork) {
    this.manager = manager;
    this.releases = releases;
    this.timings = timings;
    this.rules = rules;
    this.workThreads = workThreads;
    this.afterWork = afterWork;
  }

  /** {@link LeaseManager#runUnder}. */
  <T> T run(Lease lease, LeaseWork<T> work) throws LeaseWorkException, InterruptedException {
    Objects.requireNonNull(work, "work");
    if (lease.manager() != manager) {
      throw new IllegalArgumentException(lease + " belongs to another LeaseManager");
    }
    manager.ensureOpen("run work under " + lease);
    AtomicReference<T> result = new AtomicReference<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicReference<BoundWork> self = new AtomicReference<>();
    Thread worker =
        workThreads.newThread(
            () -> {
              try (LeaseContext.Scope scope = LeaseContext.bind(lease)) {
                result.set(work.run(lease));
              } catch (Throwable t) {
                failure.set(t);
              } finally {
                self.get().workEnded();
              }
            });
    worker.setName("lease-work-" + lease.name());
    BoundWork bound = new BoundWork(worker);
    self.set(bound);
    attach(lease, bound);
    try {
      lease.hold();
    } catch (RuntimeException e) {
      // close() came between the claim and here: the worker never starts, so nothing may wait for
      // it
      bound.workEnded();
      lease.detach(bound);
      throw e;
    }
    worker.start();
    try {
      bound.awaitSettled();
    } catch (InterruptedException e) {
      // the caller gives up on the work: stop it, but this is not a loss (the lease is still held
      // and renewed, so the work is still fenced by it) and runs no failure policy
      bound.requestStop();
      long graceNanos = timings.gracePeriod().toNanos();
      boolean stopped = Releases.awaitQuietly(bound, graceNanos);
      if (!stopped) {
        log.warn(
            "work thread {} under {} did not stop within the grace period of {} ms after its"
                + " caller was interrupted; it stays bound to the lease, which a release stops"
                + " first",
            worker.getName(),
            lease,
            timings.gracePeriod().toMillis());
        rules.workOutlivedRelease(() -> releases.runPolicy(lease, worker));
      }
      throw e;
    } finally {
      if (bound.hasEnded()) {
        lease.detach(bound);
      }
    }
    if (afterWork != null) {
      afterWork.accept(lease);
    }
    Throwable t = failure.get();
    if (bound.wasStopped()) {
      if (lease.isLost()) {
        throw new LeaseLostException(
            lease,
            lease
                + " was lost ("
                + lease.lossReason().map(Enum::name).orElse("?")
                + ") while its work ran; the work was interrupted",
            t);
      }
      boolean stopped = bound.hasEnded();
      throw new LeaseReleasedException(
          lease,
          lease
              + " was released while its work ran; "
              + (stopped
                  ? "the work was interrupted and stopped before the release"
                  : "the work was interrupted and did not stop within the grace period of "
                      + timings.gracePeriod().toMillis()
                      + " ms; it still runs, no longer under the lease"),
          stopped,
          t);
    }
    rules.workReturned(
        lease::isLost,
        () -> {
          throw new LeaseLostException(lease, lease + " was lost", t);
        });
    if (t != null) {
      throw new LeaseWorkException("work under " + lease + " failed: " + t, t);
    }
    return result.get();
  }

  /** Binds {@code bound} to {@code lease}, or says why it cannot be. */
  private static void attach(Lease lease, BoundWork bound) {
    if (!lease.isHeld() || !lease.attach(bound)) {
      if (lease.isReleased()) {
        throw new IllegalStateException(
            lease + " was released; claim the name again for a new lease");
      }
      throw new LeaseLostException(
          lease,
          lease + " is not held (" + lease.lossReason().map(Enum::name).orElse("released") + ")",
          null);
    }
  }

  /**
   * Binds the calling thread to {@code lease} as work under it, the way {@link #run} binds the
   * thread it starts ({@link LeaseInternals#bindCurrentThread}): a release or {@link
   * LeaseManager#close()} interrupts it and waits up to the grace period for it to end before
   * giving the row back; a loss interrupts it at once, and the failure policy runs if it has not
   * ended after the grace period. The caller binds {@link LeaseContext} and keeps the lease renewed
   * itself.
   */
  CallerWork bindCurrentThread(Lease lease) {
    if (lease.manager() != manager) {
      throw new IllegalArgumentException(lease + " belongs to another LeaseManager");
    }
    manager.ensureOpen("run work under " + lease);
    BoundWork bound = new BoundWork(Thread.currentThread());
    attach(lease, bound);
    return () -> {
      bound.workEnded();
      lease.detach(bound);
      return bound.wasStopped();
    };
  }
}
