package dev.lease.core.scheduler;

import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseLostException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseReleasedException;
import dev.lease.core.LeaseWorkException;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import java.time.Instant;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One job on one replica: decides from the polled slot state which instant to claim (or claim
 * again), claims it, runs the round under its lease and finishes it. At most one attempt of a job
 * at a time per replica.
 *
 * <p>Which instant: only ever the latest one the database clock has reached, later than the last on
 * record; so instants that nobody could run in time (all replicas down, or a long round) are
 * skipped and reported, never run late one after another. An unfinished instant (its round cut
 * short) is claimed again only while no later instant is due; once a later one is, claiming it
 * gives the unfinished one up (reported as superseded).
 */
final class JobRunner {

  private static final Logger log = LoggerFactory.getLogger(LeaseScheduler.class);

  /**
   * How many skipped instants are reported one by one after a gap; the rest are counted in the log.
   */
  private static final int REPORT_LIMIT = 1000;

  /** How a round ended. */
  enum Outcome {
    /** The work returned; finished. */
    FINISHED,
    /** The work threw; it ran to its end, so it is finished too (it is not run again). */
    FAILED,
    /**
     * The lease was lost or the scheduler closed while it ran; not finished, so it runs again once.
     */
    CUT_SHORT,
    /** The work ended but the finish was not recorded (the lease was no longer ours). */
    NOT_RECORDED
  }

  /**
   * The handle of a claimed instant. Only {@link #claimInstant} and {@link #claimAgain} make one
   * (its constructor is private to this class), and {@link #finish} takes nothing else: a lease of
   * the job's name claimed any other way (for example with {@link LeaseManager#tryClaim}) cannot
   * finish an instant. In the database, finish also matches the claim's holder, term and instant.
   */
  static final class SlotClaim {
    final Lease lease;
    final long instantMs;
    final boolean rerun;

    private SlotClaim(Lease lease, long instantMs, boolean rerun) {
      this.lease = lease;
      this.instantMs = instantMs;
      this.rerun = rerun;
    }
  }

  private final ScheduledJob job;
  private final Instants instants;
  private final LeaseScheduler scheduler;
  private final LeaseManager manager;
  private final Dialect dialect;
  private final AtomicBoolean busy = new AtomicBoolean();

  /** The lease of the round running now, if any: a closing scheduler releases it. */
  private volatile Lease roundLease;

  /**
   * Instants before this (database clock at start) are never claimed while the record says the job
   * never ran: a job deployed today does not run yesterday's instant. Null until started.
   */
  private volatile Long floorMs;

  JobRunner(ScheduledJob job, LeaseScheduler scheduler, LeaseManager manager) {
    this.job = job;
    this.instants = new Instants(job.schedule());
    this.scheduler = scheduler;
    this.manager = manager;
    this.dialect = LeaseInternals.dialect(manager);
  }

  String name() {
    return job.name();
  }

  /** Creates the job's row and reads the last instant on record: a job that never ran has none. */
  void start() {
    String name = job.name();
    Long[] read =
        LeaseInternals.execute(
            manager,
            "read the last instant of job " + name,
            c -> {
              dialect.createRow(c, name);
              return new Long[] {dialect.lastSlot(c, name), dialect.now(c)};
            });
    Long last = read[0];
    long now = scheduler.dueTime(read[1]);
    floorMs = now;
    if (last == null) {
      log.info(
          "job {} never ran; its first round is its first instant at or after {}",
          name,
          Instant.ofEpochMilli(now));
    } else {
      log.info("job {}: last instant on record {}", name, Instant.ofEpochMilli(last));
    }
  }

  /**
   * Looks at the polled state and starts an attempt on {@code executor} if there is an instant to
   * claim. Returns the next instant after {@code nowMs}, so the poller can wake for it (null:
   * none).
   */
  Long consider(Dialect.SlotState state, long nowMs, Executor executor) {
    Long floor = floorMs;
    if (floor == null) {
      return null; // not started
    }
    if (state == null) {
      // the row is gone (deleted by hand): create it again; the job then counts as never run
      submit(
          executor,
          () ->
              LeaseInternals.execute(
                  manager,
                  "create the row of job " + job.name(),
                  c -> {
                    dialect.createRow(c, job.name());
                    return null;
                  }));
      return null;
    }
    boolean afterLast = scheduler.rules().claimsOnlyAfterLastInstant();
    long after = state.lastMs() != null && afterLast ? state.lastMs() : floor - 1;
    if (state.free() && !busy.get()) {
      Long due = instants.latestIn(after, nowMs);
      Long unfinished = state.unfinishedMs();
      if (due != null) {
        submit(executor, () -> claimAndRun(due));
      } else if (unfinished != null
          && (!unfinished.equals(state.rerunMs()) || !scheduler.rules().rerunsOnce())) {
        submit(executor, () -> claimAgainAndRun(unfinished));
      }
    }
    return instants.nextAfter(Math.max(after, nowMs));
  }

  private void submit(Executor executor, Runnable attempt) {
    if (!busy.compareAndSet(false, true)) {
      return;
    }
    try {
      executor.execute(
          () -> {
            try {
              if (!scheduler.isClosing() && !LeaseInternals.isClosed(manager)) {
                attempt.run();
              }
            } catch (LeaseException e) {
              log.warn(
                  "job {}: attempt failed, retrying at the next poll: {}",
                  job.name(),
                  e.getMessage());
            } catch (IllegalStateException e) {
              if (LeaseInternals.isClosed(manager)) {
                log.debug("job {}: its LeaseManager closed: {}", job.name(), e.getMessage());
              } else {
                log.error("job {}: attempt failed", job.name(), e);
              }
            } catch (RuntimeException e) {
              log.error("job {}: attempt failed", job.name(), e);
            } finally {
              // a pooled thread must not carry an interrupt to the next job
              Thread.interrupted();
              busy.set(false);
              scheduler.wake();
            }
          });
    } catch (RejectedExecutionException e) {
      busy.set(false); // closing
    }
  }

  /** The lease of the round running now, or null: a closing scheduler releases it. */
  Lease roundLease() {
    return roundLease;
  }

  private void claimAndRun(long instantMs) {
    SlotClaim claim = claimInstant(instantMs);
    if (claim != null) {
      runRound(claim);
    }
  }

  private void claimAgainAndRun(long instantMs) {
    SlotClaim claim = claimAgain(instantMs);
    if (claim != null) {
      runRound(claim);
    }
  }

  /** Claims a due instant; reports the unfinished instant it gave up and the gap before it. */
  private SlotClaim claimInstant(long instantMs) {
    String name = job.name();
    String holder = LeaseInternals.mintHolder(manager);
    long start = LeaseInternals.clock(manager).nanoTime();
    long leaseMs = manager.timings().leaseDuration().toMillis();
    boolean requireLater = scheduler.rules().claimsOnlyAfterLastInstant();
    Dialect.SlotClaimed claimed =
        LeaseInternals.execute(
            manager,
            "claim instant " + Instant.ofEpochMilli(instantMs) + " of job " + name,
            c ->
                dialect.claimSlot(
                    c, name, holder, manager.instance(), leaseMs, instantMs, requireLater));
    if (claimed == null) {
      log.debug(
          "job {} instant {}: claimed by another replica or not due",
          name,
          Instant.ofEpochMilli(instantMs));
      return null;
    }
    Lease lease =
        LeaseInternals.adoptClaim(
            manager, name, holder, claimed.term(), claimed.fromAnother(), start);
    Long gaveUp = claimed.previousUnfinishedMs();
    if (gaveUp != null && gaveUp != instantMs) {
      log.warn(
          "job {} instant {} superseded by instant {} term {}: its round was cut short and"
              + " not run to its end",
          name,
          Instant.ofEpochMilli(gaveUp),
          Instant.ofEpochMilli(instantMs),
          claimed.term());
      LeaseInternals.notifyListeners(manager, l -> l.instantSuperseded(name, gaveUp));
    }
    Long previous = claimed.previousSlotMs();
    if (previous != null && previous < instantMs) {
      reportSkipped(previous, instantMs, "no replica claimed it in time");
    }
    return new SlotClaim(lease, instantMs, false);
  }

  /** Claims the unfinished instant of a round cut short, once. */
  private SlotClaim claimAgain(long instantMs) {
    String name = job.name();
    String holder = LeaseInternals.mintHolder(manager);
    long start = LeaseInternals.clock(manager).nanoTime();
    long leaseMs = manager.timings().leaseDuration().toMillis();
    boolean once = scheduler.rules().rerunsOnce();
    Long term =
        LeaseInternals.execute(
            manager,
            "claim instant " + Instant.ofEpochMilli(instantMs) + " of job " + name + " again",
            c ->
                dialect.claimSlotAgain(
                    c, name, holder, manager.instance(), leaseMs, instantMs, once));
    if (term == null) {
      return null;
    }
    return new SlotClaim(
        // a rerun follows a round cut short, most often another replica's
        LeaseInternals.adoptClaim(manager, name, holder, term, true, start), instantMs, true);
  }

  private void runRound(SlotClaim claim) {
    Lease lease = claim.lease;
    long instantMs = claim.instantMs;
    boolean rerun = claim.rerun;
    String name = job.name();
    Instant instant = Instant.ofEpochMilli(instantMs);
    ScheduledJob.Round round = new ScheduledJob.Round(name, instant, lease, rerun);
    log.debug(
        "job {} instant {} term {}: round started{}",
        name,
        instant,
        lease.term(),
        rerun ? " (rerun of a round cut short)" : "");
    Outcome outcome;
    Throwable failure = null;
    // set before the closing check, which close() makes after it set closing: either close() sees
    // this round's lease and releases it (stopping the work first), or the round sees the close
    roundLease = lease;
    try {
      if (scheduler.isClosing()) {
        throw new InterruptedException("the scheduler is closing");
      }
      manager.runUnder(
          lease,
          l -> {
            job.work().run(round);
            return null;
          });
      outcome = Outcome.FINISHED;
    } catch (LeaseWorkException e) {
      failure = e.getCause();
      outcome = Outcome.FAILED;
    } catch (LeaseLostException | LeaseReleasedException e) {
      // lost, or released by a closing scheduler or manager (which stopped the work first)
      failure = e;
      outcome = Outcome.CUT_SHORT;
    } catch (IllegalStateException e) {
      // the manager closed, or the lease was released by a close, before the work started
      failure = e;
      outcome = Outcome.CUT_SHORT;
    } catch (InterruptedException e) {
      outcome = Outcome.CUT_SHORT;
    } finally {
      roundLease = null;
    }
    if (outcome != Outcome.CUT_SHORT) {
      Outcome finished = finish(claim);
      outcome = finished == Outcome.FINISHED ? outcome : finished;
    } else {
      try {
        lease.release(); // gives the name back at once; the instant stays unfinished
      } catch (LeaseException e) {
        log.debug(
            "job {}: release after a cut-short round failed; the lease expires: {}",
            name,
            e.getMessage());
      }
    }
    switch (outcome) {
      case FINISHED ->
          log.info("job {} instant {} term {}: {}", name, instant, lease.term(), outcome);
      case FAILED ->
          log.warn(
              "job {} instant {} term {}: {} (finished; not run again)",
              name,
              instant,
              lease.term(),
              outcome,
              failure);
      case CUT_SHORT ->
          log.warn(
              "job {} instant {} term {}: {} ({}); {}",
              name,
              instant,
              lease.term(),
              outcome,
              failure != null ? failure.getMessage() : "scheduler closed",
              rerun
                  ? "it was already the rerun, so it does not run again"
                  : "another replica runs it again once");
      case NOT_RECORDED ->
          log.warn(
              "job {} instant {} term {}: {}: the lease was no longer ours when"
                  + " the round ended; the instant may run again once",
              name,
              instant,
              lease.term(),
              outcome);
      default -> throw new IllegalStateException(outcome.name());
    }
  }

  /**
   * Finishes the round and takes along the last instant it overran, by the database clock read in
   * the same session just before, so no replica runs those late; they are reported as skipped.
   */
  private Outcome finish(SlotClaim claim) {
    Lease lease = claim.lease;
    long instantMs = claim.instantMs;
    String name = job.name();
    long[] recorded = {instantMs};
    try {
      BooleanSupplier end =
          () ->
              LeaseInternals.execute(
                  manager,
                  "finish instant " + Instant.ofEpochMilli(instantMs) + " of job " + name,
                  c -> {
                    Long overrun =
                        instants.latestIn(
                            instantMs, scheduler.dueTime(LeaseInternals.dialect(manager).now(c)));
                    recorded[0] = scheduler.rules().finishRecords(instantMs, overrun);
                    return dialect.finishSlot(
                        c, name, lease.holder(), lease.term(), instantMs, recorded[0]);
                  });
      AtomicBoolean endedHere = new AtomicBoolean();
      boolean done =
          LeaseInternals.endWith(
              lease,
              () -> {
                endedHere.set(true);
                return end.getAsBoolean();
              });
      if (!endedHere.get() && scheduler.rules().finishesWithoutLease()) {
        // The work returned, but the lease object is no longer held here: lost after the work
        // ended (its local deadline passed meanwhile), or released by a close. The round did run
        // to its end, so record it if the row is still our claim: finishSlot matches holder, term
        // and instant, so it cannot touch a successor's claim.
        done = end.getAsBoolean();
        if (done) {
          log.info(
              "job {} instant {} term {}: recorded the finish without the lease (it ended after"
                  + " the round's work returned)",
              name,
              Instant.ofEpochMilli(instantMs),
              lease.term());
        }
      }
      if (!done) {
        return Outcome.NOT_RECORDED;
      }
      if (recorded[0] > instantMs) {
        reportSkipped(
            instantMs,
            recorded[0] + 1,
            "overrun by the round of " + Instant.ofEpochMilli(instantMs));
      }
      return Outcome.FINISHED;
    } catch (LeaseException e) {
      log.warn(
          "job {}: could not finish instant {}: {}",
          name,
          Instant.ofEpochMilli(instantMs),
          e.getMessage());
      return Outcome.NOT_RECORDED;
    }
  }

  /** Reports the instants in ({@code afterMs}, {@code beforeMs}) as skipped. */
  private void reportSkipped(long afterMs, long beforeMs, String why) {
    String name = job.name();
    long more =
        instants.between(
            afterMs,
            beforeMs,
            REPORT_LIMIT,
            s -> {
              log.warn("job {} instant {} skipped: {}", name, Instant.ofEpochMilli(s), why);
              LeaseInternals.notifyListeners(manager, l -> l.instantSkipped(name, s));
            });
    if (more > 0) {
      log.warn("job {}: {} more instants skipped ({})", name, more, why);
    }
  }
}
