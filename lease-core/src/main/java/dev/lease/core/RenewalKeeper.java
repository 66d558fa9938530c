package dev.lease.core;

import java.sql.SQLException;
import java.sql.SQLTimeoutException;
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
 *   <li>the renewal: the lease takes part in its manager's {@link BatchRenewal}, which renews every
 *       lease the manager keeps with one statement per renew interval (per 1,000 leases); a lease
 *       the batch failed to renew is in the next one;
 *   <li>the deadline timer fires at the local deadline, {@code localDeadline} after the start of
 *       the last successful renewal (the start of the batch that renewed it), and declares the
 *       lease lost unless a renewal moved it.
 * </ul>
 *
 * <p>Both run on the manager's scheduler and never run user code there: a loss is handed to the
 * manager's loss handling ({@link Releases#handleLoss}), and listeners of renewals run on attempt
 * threads.
 */
final class RenewalKeeper {

  private static final Logger log = LoggerFactory.getLogger(RenewalKeeper.class);

  private final Lease lease;
  private final LeaseManager manager;
  private final long renewIntervalNanos;
  private final long localDeadlineNanos;

  // guarded by this
  private boolean stopped;
  private ScheduledFuture<?> deadline;

  RenewalKeeper(Lease lease, LeaseManager manager) {
    this.lease = lease;
    this.manager = manager;
    this.renewIntervalNanos = manager.timings().renewInterval().toNanos();
    this.localDeadlineNanos = manager.timings().localDeadline().toNanos();
  }

  Lease lease() {
    return lease;
  }

  void start() {
    long last = lease.lastRenewalStart();
    long now = manager.clock().nanoTime();
    scheduleDeadline(Math.max(0, last + localDeadlineNanos - now));
    manager.renewals().add(this);
  }

  void stop() {
    synchronized (this) {
      stopped = true;
      if (deadline != null) {
        deadline.cancel(false);
      }
    }
    manager.renewals().remove(this);
  }

  synchronized boolean isStopped() {
    return stopped;
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
  void keeperGone() {
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

  /**
   * On an attempt's thread: records the outcome of the renewal that started at {@code start}.
   *
   * @param renewed whether the database renewed it; null if the attempt failed with {@code error}
   * @param timedOut the attempt was abandoned at the attempt timeout
   * @return the outcome
   */
  RenewalOutcome attemptDone(long start, Boolean renewed, Throwable error, boolean timedOut) {
    try {
      if (error != null) {
        Throwable cause = Attempts.unwrap(error);
        RenewalOutcome outcome =
            timedOut || isTimeout(cause) ? RenewalOutcome.TIMEOUT : RenewalOutcome.ERROR;
        log.warn(
            "renewal of lease {} term {} instance {} failed ({}), retrying in {} ms: {}",
            lease.name(),
            lease.term(),
            lease.instance(),
            outcome,
            renewIntervalNanos / 1_000_000,
            cause.getMessage());
        Exception failure =
            cause instanceof Exception e ? e : new LeaseException(String.valueOf(cause), cause);
        manager.safely(l -> l.renewalFailed(lease, failure));
        manager.safely(l -> l.renewalCompleted(lease, outcome));
        return outcome;
      }
      if (renewed) {
        if (lease.renewed(start)) {
          log.debug("renewed lease {} term {}", lease.name(), lease.term());
          manager.safely(l -> l.renewed(lease));
          manager.safely(l -> l.renewalCompleted(lease, RenewalOutcome.RENEWED));
          scheduleDeadline(
              Math.max(
                  0, lease.lastRenewalStart() + localDeadlineNanos - manager.clock().nanoTime()));
          return RenewalOutcome.RENEWED;
        }
        // too late: the local deadline had passed (lost, self-fenced), or released meanwhile
        RenewalOutcome outcome = lease.isLost() ? RenewalOutcome.LOST : RenewalOutcome.RENEWED;
        manager.safely(l -> l.renewalCompleted(lease, outcome));
        return outcome;
      }
      manager.safely(l -> l.renewalCompleted(lease, RenewalOutcome.LOST));
      lease.lose(LossReason.NOT_HELD);
      return RenewalOutcome.LOST;
    } finally {
      lease.renewalEnded();
    }
  }

  /**
   * Whether {@code t} (or a cause of it) is a timeout: the JDBC timeout type, PostgreSQL's lock or
   * statement timeout, MySQL/MariaDB's lock wait or statement time limit.
   */
  static boolean isTimeout(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof SQLTimeoutException || c instanceof Attempts.AttemptTimedOut) {
        return true;
      }
      if (c instanceof SQLException s) {
        String state = s.getSQLState();
        int code = s.getErrorCode();
        if ("55P03".equals(state)
            || "57014".equals(state)
            || code == 1205
            || code == 1969
            || code == 3024) {
          return true;
        }
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return false;
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
