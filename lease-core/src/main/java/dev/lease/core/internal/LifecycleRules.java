package dev.lease.core.internal;

import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * The rules of a lease manager's lifecycle that the negative controls of the tests break one at a
 * time: the order of a release, the closed check, where a loss is handled and its grace period
 * timed, when the failure policy runs, how attempts are bounded, how steps and batches reach the
 * database. The default methods are the rules; production runs {@link #PRODUCTION}.
 *
 * <p>A weakened implementation (the control of one mechanism) lives in test sources only, never in
 * the jar, and reaches a manager through {@link LeaseInternals#rulesForTesting}, honoured only in a
 * test JVM. Production code asks a rule here and branches on no test switch.
 *
 * <p>Not API: it may change in any release.
 */
public interface LifecycleRules {

  /** The rules every production manager runs. */
  LifecycleRules PRODUCTION = new LifecycleRules() {};

  /**
   * A release (one lease's, a close's, a group's drain): stops the work under the leases first,
   * then gives their rows back, so no work acts under a row another process may already hold.
   *
   * @param stopWork interrupts the work and waits up to one grace period for it to end
   * @param giveBack releases the rows
   */
  default void release(Runnable stopWork, Runnable giveBack) {
    stopWork.run();
    giveBack.run();
  }

  /** Whether a closed manager refuses to claim and hold, and releases a claim racing close(). */
  default boolean checksClosed() {
    return true;
  }

  /**
   * Hands a loss's onLoss callbacks and listeners to the loss executor, off the thread that found
   * the loss (a keeper thread, or the application's thread that asked {@code isHeld()}).
   */
  default void dispatchLoss(Runnable callbacks, Executor lossExecutor) {
    lossExecutor.execute(callbacks);
  }

  /** Whether a lease lost at its local deadline is released once its work stopped. */
  default boolean releasesAtDeadline() {
    return true;
  }

  /**
   * Times the grace period after a loss whose work still runs: on the loss executor, so it still
   * ends in the failure policy when close() has stopped the keeper's scheduler.
   *
   * @param graceOnLossExecutor hands the grace period (the wait, then the failure policy if work
   *     still runs, else the release at the local deadline) to the loss executor
   * @param keeperScheduler the keeper's scheduler, which close() stops
   * @param graceNanos the grace period
   * @param policyIfWorkRuns runs the failure policy if work under the lease still runs
   */
  default void timeGrace(
      Runnable graceOnLossExecutor,
      ScheduledExecutorService keeperScheduler,
      long graceNanos,
      Runnable policyIfWorkRuns) {
    graceOnLossExecutor.run();
  }

  /**
   * Work that did not stop within the grace period of a release, a close or its caller's interrupt:
   * given up on, logged. A release is not a loss: no failure policy.
   *
   * @param failurePolicy runs the failure policy for the work's thread
   */
  default void workOutlivedRelease(Runnable failurePolicy) {}

  /**
   * Whether the failure policy may run now for a lease: at most once per lease.
   *
   * @param ran the lease's flag, set by the first run
   */
  default boolean mayRunPolicy(AtomicBoolean ran) {
    return ran.compareAndSet(false, true);
  }

  /**
   * The work under a lease returned (runUnder): a loss after that is not the work's, the outcome is
   * the work's own.
   *
   * @param lost whether the lease is lost now
   * @param reportLoss throws the work's outcome as a loss
   */
  default void workReturned(BooleanSupplier lost, Runnable reportLoss) {}

  /**
   * Whether an attempt is bounded as a whole, borrowing its connection included (not only per
   * statement), and a renewal pass does not wait for the previous one.
   */
  default boolean boundsAttempts() {
    return true;
  }

  /**
   * Whether a lease step (claim, renew, release, verify) is one statement carrying its own bounds,
   * not the multi-statement lease session (isolation, bounds, commit, restore).
   */
  default boolean stepsAsOneStatement() {
    return true;
  }

  /** How many leases one renewal statement renews, of the dialect's {@code max}. */
  default int renewalsPerStatement(int max) {
    return max;
  }

  /** How many leases one release statement releases, of the dialect's {@code max}. */
  default int releasesPerStatement(int max) {
    return max;
  }
}
