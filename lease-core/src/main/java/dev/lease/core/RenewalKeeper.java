package dev.lease.core;

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
 *       the same cadence), each on the attempt executor, bounded by the attempt timeout;
 *   <li>the deadline timer fires at the local deadline, {@code localDeadline} after the start of
 *       the last successful renewal, and declares the lease lost unless a renewal moved it.
 * </ul>
 */
final class RenewalKeeper {

  private static final Logger log = LoggerFactory.getLogger(RenewalKeeper.class);

  private final Lease lease;
  private final LeaseManager manager;
  private final long renewIntervalNanos;
  private final long localDeadlineNanos;

  // guarded by this
  private boolean stopped;
  private ScheduledFuture<?> renewal;
  private ScheduledFuture<?> deadline;

  RenewalKeeper(Lease lease, LeaseManager manager) {
    this.lease = lease;
    this.manager = manager;
    this.renewIntervalNanos = manager.timings().renewInterval().toNanos();
    this.localDeadlineNanos = manager.timings().localDeadline().toNanos();
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

  private synchronized void scheduleRenewal(long delayNanos) {
    if (stopped) {
      return;
    }
    try {
      renewal = manager.scheduler().schedule(this::startAttempt, delayNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      stopped = true; // the manager is closing
    }
  }

  private synchronized void scheduleDeadline(long delayNanos) {
    if (stopped) {
      return;
    }
    if (deadline != null) {
      deadline.cancel(false); // one pending deadline check at a time
    }
    try {
      deadline =
          manager.scheduler().schedule(this::deadlineCheck, delayNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      stopped = true;
    }
  }

  private synchronized boolean isStopped() {
    return stopped;
  }

  private void startAttempt() {
    if (isStopped() || !lease.held()) {
      return;
    }
    try {
      manager.attemptExecutor().execute(this::attempt);
    } catch (RejectedExecutionException e) {
      stop();
    }
  }

  private void attempt() {
    long start = manager.clock().nanoTime();
    lease.renewalStarted();
    try {
      if (manager.renewInDatabase(lease)) {
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
    } catch (RuntimeException e) {
      log.warn(
          "renewal of lease {} term {} instance {} failed, retrying in {} ms: {}",
          lease.name(),
          lease.term(),
          lease.instance(),
          renewIntervalNanos / 1_000_000,
          e.getMessage());
      manager.safely(l -> l.renewalFailed(lease, e));
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
