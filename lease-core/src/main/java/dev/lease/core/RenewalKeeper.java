package dev.lease.core;

import dev.lease.core.internal.TestFault;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one lease renewed. Two independent timers, so that a renewal stuck in the network can never
 * keep the holder believing it holds the lease:
 *
 * <ul>
 *   <li>the renewal timer starts an attempt every renew interval (a failed attempt is retried at
 *       the same cadence), each on the attempt executor and bounded as a whole (connection borrow
 *       included) by the attempt timeout: an attempt that has not completed by then counts as
 *       failed and the next one starts on time;
 *   <li>the deadline timer fires at the local deadline, {@code localDeadline} after the start of
 *       the last successful renewal, and declares the lease lost unless a renewal moved it.
 * </ul>
 *
 * <p>Both timers run on the manager's scheduler and never run user code there: a loss is handed to
 * the manager's loss handling ({@link LeaseManager#handleLoss}), and listeners of renewals run on
 * attempt threads.
 */
final class RenewalKeeper {

  private static final Logger log = LoggerFactory.getLogger(RenewalKeeper.class);

  private final Lease lease;
  private final LeaseManager manager;
  private final long renewIntervalNanos;
  private final long localDeadlineNanos;
  private final long attemptTimeoutNanos;

  // guarded by this
  private boolean stopped;
  private ScheduledFuture<?> renewal;
  private ScheduledFuture<?> deadline;

  RenewalKeeper(Lease lease, LeaseManager manager) {
    this.lease = lease;
    this.manager = manager;
    this.renewIntervalNanos = manager.timings().renewInterval().toNanos();
    this.localDeadlineNanos = manager.timings().localDeadline().toNanos();
    this.attemptTimeoutNanos = manager.timings().attemptTimeout().toNanos();
  }

  void start() {
    long last = lease.lastRenewalStart();
    long now = manager.clock().nanoTime();
    scheduleRenewal(Math.max(0, last + renewIntervalNanos - now));
    scheduleDeadline(Math.max(0, last + localDeadlineNanos - now));
  }

  synchronized void stop() {
    stopped = true;
    if (renewal != null) {
      renewal.cancel(false);
    }
    if (deadline != null) {
      deadline.cancel(false);
    }
  }

  private void scheduleRenewal(long delayNanos) {
    boolean rejected;
    synchronized (this) {
      if (stopped) {
        return;
      }
      try {
        renewal =
            manager.scheduler().schedule(this::startAttempt, delayNanos, TimeUnit.NANOSECONDS);
        return;
      } catch (RejectedExecutionException e) {
        rejected = true;
      }
    }
    if (rejected) {
      keeperGone();
    }
  }

  private void scheduleDeadline(long delayNanos) {
    synchronized (this) {
      if (stopped) {
        return;
      }
      if (deadline != null) {
        deadline.cancel(false); // one pending deadline check at a time
      }
      try {
        deadline =
            manager.scheduler().schedule(this::deadlineCheck, delayNanos, TimeUnit.NANOSECONDS);
        return;
      } catch (RejectedExecutionException e) {
        // handled below, outside the lock
      }
    }
    keeperGone();
  }

  /**
   * The scheduler refuses the keeper's timers (it was shut down, and not by a release of this
   * lease, which stops the keeper first): nothing can renew the lease or watch its deadline any
   * more, so it is given up now, as at its local deadline, and its loss handled as any loss (the
   * work interrupted, the failure policy after the grace period if it does not stop).
   */
  private void keeperGone() {
    synchronized (this) {
      stopped = true;
    }
    if (lease.held()) {
      log.warn(
          "the keeper of lease {} term {} cannot schedule its timers (its scheduler was shut"
              + " down); giving the lease up",
          lease.name(),
          lease.term());
      lease.lose(LossReason.LOCAL_DEADLINE);
    }
  }

  private synchronized boolean isStopped() {
    return stopped;
  }

  /** On the keeper's scheduler: starts one attempt, never waits for it. */
  private void startAttempt() {
    if (isStopped() || !lease.held()) {
      return;
    }
    long start = manager.clock().nanoTime();
    lease.renewalStarted();
    String what = "renew lease " + lease.name();
    if (manager.has(TestFault.UNBOUNDED_ATTEMPT)) {
      // the bug: the next attempt waits for this one, however long its borrow blocks
      try {
        manager
            .attemptExecutor()
            .execute(
                () -> {
                  try {
                    attemptDone(start, manager.renewInDatabase(lease), null);
                  } catch (RuntimeException e) {
                    attemptDone(start, null, e);
                  }
                });
      } catch (RejectedExecutionException e) {
        lease.renewalEnded();
        stop();
      }
      return;
    }
    CompletableFuture<Boolean> attempt =
        manager.submitAttempt(what, manager.renewCall(lease), null);
    ScheduledFuture<?> timeout = null;
    if (!attempt.isDone()) {
      try {
        timeout =
            manager
                .scheduler()
                .schedule(
                    () -> manager.expire(attempt, what), attemptTimeoutNanos, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        // shutting down: the attempt's own database and network timeouts still bound it
      }
    }
    ScheduledFuture<?> pending = timeout;
    attempt.whenComplete(
        (renewed, error) -> {
          if (pending != null) {
            pending.cancel(false);
          }
          attemptDone(start, renewed, error);
        });
  }

  /** On the attempt's thread: records the outcome and schedules the next attempt. */
  private void attemptDone(long start, Boolean renewed, Throwable error) {
    try {
      if (error != null) {
        Throwable cause = LeaseManager.unwrap(error);
        log.warn(
            "renewal of lease {} term {} instance {} failed, retrying in {} ms: {}",
            lease.name(),
            lease.term(),
            lease.instance(),
            renewIntervalNanos / 1_000_000,
            cause.getMessage());
        Exception failure =
            cause instanceof Exception e ? e : new LeaseException(String.valueOf(cause), cause);
        manager.safely(l -> l.renewalFailed(lease, failure));
      } else if (renewed) {
        if (lease.renewed(start)) {
          log.debug("renewed lease {} term {}", lease.name(), lease.term());
          manager.safely(l -> l.renewed(lease));
          scheduleDeadline(
              Math.max(
                  0, lease.lastRenewalStart() + localDeadlineNanos - manager.clock().nanoTime()));
        }
      } else {
        lease.lose(LossReason.NOT_HELD);
        return;
      }
    } finally {
      lease.renewalEnded();
    }
    long next = start + renewIntervalNanos - manager.clock().nanoTime();
    scheduleRenewal(Math.max(0, next));
  }

  private void deadlineCheck() {
    if (isStopped()) {
      return;
    }
    if (!lease.checkDeadline() && lease.held()) {
      long left = lease.lastRenewalStart() + localDeadlineNanos - manager.clock().nanoTime();
      scheduleDeadline(Math.max(0, left));
    }
  }
}
