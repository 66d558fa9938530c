package dev.lease.core;

import dev.lease.core.internal.LeaseInternals;
import dev.lease.core.internal.LifecycleRules;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

/**
 * A lease manager's {@link LifecycleRules} broken on purpose, one mechanism per factory, for the
 * negative controls of the tests; never in the jar. Each factory restores a bug the lifecycle tests
 * must catch; {@link #and} combines them. Applied with {@link #applyTo} ({@link
 * LeaseInternals#rulesForTesting}, honoured only in a test JVM).
 */
public final class WeakenedLifecycle implements LifecycleRules, Weakening {

  private enum Bug {
    RELEASE_BEFORE_STOPPING_WORK,
    NO_CLOSED_CHECK,
    GRACE_ON_KEEPER_SCHEDULER,
    POLICY_ON_RELEASE,
    POLICY_NOT_ONCE,
    LOSS_HANDLING_INLINE,
    UNBOUNDED_ATTEMPT,
    LOSS_AFTER_RETURN_IS_A_LOSS,
    NO_RELEASE_AT_DEADLINE,
    STEP_IN_SESSION,
    RENEW_ONE_BY_ONE,
    RELEASE_ONE_BY_ONE
  }

  private final Set<Bug> bugs;

  private WeakenedLifecycle(Set<Bug> bugs) {
    this.bugs = bugs;
  }

  private static WeakenedLifecycle of(Bug bug) {
    return new WeakenedLifecycle(EnumSet.of(bug));
  }

  /** A release gives the row back first and stops the work under the lease afterwards. */
  public static WeakenedLifecycle releaseBeforeStoppingWork() {
    return of(Bug.RELEASE_BEFORE_STOPPING_WORK);
  }

  /** A closed manager still claims and holds, and a claim racing close() is handed out. */
  public static WeakenedLifecycle noClosedCheck() {
    return of(Bug.NO_CLOSED_CHECK);
  }

  /** The grace period after a loss is timed on the keeper's scheduler, which close() stops. */
  public static WeakenedLifecycle graceOnKeeperScheduler() {
    return of(Bug.GRACE_ON_KEEPER_SCHEDULER);
  }

  /** A release or close whose work does not stop within the grace runs the failure policy. */
  public static WeakenedLifecycle policyOnRelease() {
    return of(Bug.POLICY_ON_RELEASE);
  }

  /** The failure policy may run more than once for one lease. */
  public static WeakenedLifecycle policyNotOnce() {
    return of(Bug.POLICY_NOT_ONCE);
  }

  /** Loss callbacks and listeners run on the thread that found the loss (a keeper thread). */
  public static WeakenedLifecycle lossHandlingInline() {
    return of(Bug.LOSS_HANDLING_INLINE);
  }

  /** An attempt is bounded per statement only; borrowing its connection has no bound. */
  public static WeakenedLifecycle unboundedAttempt() {
    return of(Bug.UNBOUNDED_ATTEMPT);
  }

  /**
   * runUnder reports a loss that came after the work had returned (the scheduler then counts a
   * round that ran to its end as cut short).
   */
  public static WeakenedLifecycle lossAfterReturnIsALoss() {
    return of(Bug.LOSS_AFTER_RETURN_IS_A_LOSS);
  }

  /** A lease lost at its local deadline is not released. */
  public static WeakenedLifecycle noReleaseAtDeadline() {
    return of(Bug.NO_RELEASE_AT_DEADLINE);
  }

  /**
   * Claim, renew, release and verify run in the multi-statement lease session (isolation, bounds,
   * commit, restore) instead of one statement each.
   */
  public static WeakenedLifecycle stepInSession() {
    return of(Bug.STEP_IN_SESSION);
  }

  /** A manager renews each lease with a statement of its own instead of one batch for all. */
  public static WeakenedLifecycle renewOneByOne() {
    return of(Bug.RENEW_ONE_BY_ONE);
  }

  /** A release of several leases (close, a group's drain) sends a statement per lease. */
  public static WeakenedLifecycle releaseOneByOne() {
    return of(Bug.RELEASE_ONE_BY_ONE);
  }

  /** These bugs and {@code other}'s together. */
  public WeakenedLifecycle and(WeakenedLifecycle other) {
    Set<Bug> both = EnumSet.copyOf(bugs);
    both.addAll(other.bugs);
    return new WeakenedLifecycle(both);
  }

  /** Builds {@code builder}'s manager with these rules. */
  public LeaseManager.Builder applyTo(LeaseManager.Builder builder) {
    return LeaseInternals.rulesForTesting(builder, this);
  }

  private boolean has(Bug bug) {
    return bugs.contains(bug);
  }

  @Override
  public void release(Runnable stopWork, Runnable giveBack) {
    if (has(Bug.RELEASE_BEFORE_STOPPING_WORK)) {
      giveBack.run();
      stopWork.run();
    } else {
      LifecycleRules.super.release(stopWork, giveBack);
    }
  }

  @Override
  public boolean checksClosed() {
    return !has(Bug.NO_CLOSED_CHECK);
  }

  @Override
  public void dispatchLoss(Runnable callbacks, Executor lossExecutor) {
    if (has(Bug.LOSS_HANDLING_INLINE)) {
      callbacks.run();
    } else {
      LifecycleRules.super.dispatchLoss(callbacks, lossExecutor);
    }
  }

  @Override
  public boolean releasesAtDeadline() {
    return !has(Bug.NO_RELEASE_AT_DEADLINE);
  }

  @Override
  public void timeGrace(
      Runnable graceOnLossExecutor,
      ScheduledExecutorService keeperScheduler,
      long graceNanos,
      Runnable policyIfWorkRuns) {
    if (!has(Bug.GRACE_ON_KEEPER_SCHEDULER)) {
      LifecycleRules.super.timeGrace(
          graceOnLossExecutor, keeperScheduler, graceNanos, policyIfWorkRuns);
      return;
    }
    try {
      keeperScheduler.schedule(policyIfWorkRuns, graceNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // the bug: no failure policy once the scheduler is shut down
    }
  }

  @Override
  public void workOutlivedRelease(Runnable failurePolicy) {
    if (has(Bug.POLICY_ON_RELEASE)) {
      failurePolicy.run();
    }
  }

  @Override
  public boolean mayRunPolicy(AtomicBoolean ran) {
    return has(Bug.POLICY_NOT_ONCE) || LifecycleRules.super.mayRunPolicy(ran);
  }

  @Override
  public void workReturned(BooleanSupplier lost, Runnable reportLoss) {
    if (has(Bug.LOSS_AFTER_RETURN_IS_A_LOSS) && lost.getAsBoolean()) {
      reportLoss.run();
    }
  }

  @Override
  public boolean boundsAttempts() {
    return !has(Bug.UNBOUNDED_ATTEMPT);
  }

  @Override
  public boolean stepsAsOneStatement() {
    return !has(Bug.STEP_IN_SESSION);
  }

  @Override
  public int renewalsPerStatement(int max) {
    return has(Bug.RENEW_ONE_BY_ONE) ? 1 : max;
  }

  @Override
  public int releasesPerStatement(int max) {
    return has(Bug.RELEASE_ONE_BY_ONE) ? 1 : max;
  }

  @Override
  public String toString() {
    // the former fault's name: the tests put it into lease and instance names
    return bugs.stream().map(Enum::name).collect(Collectors.joining("-"));
  }
}
