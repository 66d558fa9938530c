package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LifecycleRules;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a {@link LeaseManager}'s leases: release (one lease, many, all at close), transfer to
 * a successor, and the handling of a loss (callbacks, listeners, grace period, failure policy). A
 * release and a transfer stop the work under a lease before its row is given back; a loss
 * interrupts the work at once and runs the failure policy if it does not stop.
 */
final class Releases {

  // the manager's logger: operators filter on it, whichever class of the manager logs
  private static final Logger log = LoggerFactory.getLogger(LeaseManager.class);

  private final LeaseManager manager;
  private final Attempts attempts;
  private final Dialect dialect;
  private final String instance;
  private final LeaseTimings timings;
  private final LifecycleRules rules;
  private final FailurePolicy failurePolicy;
  private final ScheduledExecutorService scheduler;
  private final Executor lossExecutor;

  Releases(
      LeaseManager manager,
      Attempts attempts,
      Dialect dialect,
      String instance,
      LeaseTimings timings,
      LifecycleRules rules,
      FailurePolicy failurePolicy,
      ScheduledExecutorService scheduler,
      Executor lossExecutor) {
    this.manager = manager;
    this.attempts = attempts;
    this.dialect = dialect;
    this.instance = instance;
    this.timings = timings;
    this.rules = rules;
    this.failurePolicy = failurePolicy;
    this.scheduler = scheduler;
    this.lossExecutor = lossExecutor;
  }

  /**
   * Releases {@code leases} in the order every release follows: interrupts the work under all of
   * them, waits up to one grace period for it to end, then releases the rows. Work that has not
   * ended by then is given up on (logged; never the failure policy: a release is not a loss). A
   * lease another thread is releasing is waited for, bounded.
   *
   * @param rethrow whether a failed release statement is thrown (one lease's {@link
   *     Lease#release()}) or only logged (close, a scheduler closing)
   */
  void release(Collection<Lease> leases, boolean rethrow) {
    List<Lease> ours = new ArrayList<>();
    List<Lease> others = new ArrayList<>();
    List<List<BoundWork>> stopping = new ArrayList<>();
    for (Lease l : leases) {
      List<BoundWork> works = l.beginRelease();
      if (works == null) {
        others.add(l);
      } else {
        ours.add(l);
        stopping.add(works);
      }
    }
    boolean[] stopInterrupted = {false};
    LeaseException[] giveBackFailure = {null};
    rules.release(
        () -> stopInterrupted[0] = stopWork(stopping),
        () -> giveBackFailure[0] = giveBackAll(ours, rethrow));
    boolean interrupted = stopInterrupted[0];
    LeaseException failure = giveBackFailure[0];
    for (int i = 0; i < ours.size(); i++) {
      Lease lease = ours.get(i);
      endWork(lease, stopping.get(i), false);
    }
    long bound = timings.gracePeriod().toNanos() + 2 * timings.attemptTimeout().toNanos();
    for (Lease l : others) {
      try {
        if (!l.awaitOver(bound)) {
          log.warn("{} is still being released by another thread", l);
        }
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (failure != null && rethrow) {
      throw failure;
    }
  }

  /**
   * Interrupts the work under leases being released or transferred and waits up to one grace period
   * for all of it to end. An interrupt of the calling thread ends the wait (the release goes ahead
   * at once).
   *
   * @return whether the calling thread was interrupted (the caller sets the flag again at its end)
   */
  private boolean stopWork(List<List<BoundWork>> stopping) {
    for (List<BoundWork> works : stopping) {
      works.forEach(BoundWork::requestStop);
    }
    long deadline = System.nanoTime() + timings.gracePeriod().toNanos();
    boolean interrupted = false;
    for (List<BoundWork> works : stopping) {
      for (BoundWork w : works) {
        try {
          w.awaitEnd(deadline - System.nanoTime());
        } catch (InterruptedException e) {
          interrupted = true; // stop waiting, release at once
          deadline = System.nanoTime();
        }
      }
    }
    return interrupted;
  }

  /**
   * After {@link #stopWork}: detaches the work under {@code lease} that ended, and gives up on the
   * work that did not (an ERROR line; the lease ends anyway and its fenced transactions are refused
   * from now on). A release or a transfer is not a loss: no failure policy.
   */
  private void endWork(Lease lease, List<BoundWork> works, boolean transfer) {
    for (BoundWork w : works) {
      if (!w.hasEnded()) {
        log.error(
            "work thread {} under lease {} term {} did not stop within the grace period of {} ms"
                + " of its {}",
            w.thread.getName(),
            lease.name(),
            lease.term(),
            timings.gracePeriod().toMillis(),
            transfer
                ? "transfer; transferred anyway (its fenced transactions are refused from now on)"
                : "release; released anyway (a release is not a loss: no failure policy), its"
                    + " fenced transactions are refused from now on");
        if (!transfer) {
          rules.workOutlivedRelease(() -> runPolicy(lease, w.thread));
        }
        w.giveUp();
      } else {
        lease.detach(w);
      }
    }
  }

  /**
   * Marks {@code leases} released and releases their rows in batches: one statement per {@link
   * Dialect#MAX_RENEWALS_PER_STATEMENT} leases ({@link Dialect#releaseAll}), one INFO line per
   * batch and a DEBUG line per lease. A single lease keeps its own statement ({@link #giveBack}).
   * The caller has stopped the work under every lease before (the order of every release).
   */
  private LeaseException giveBackAll(List<Lease> leases, boolean rethrow) {
    if (leases.size() <= 1) {
      return giveBack(leases, rethrow);
    }
    List<Lease> releasing = new ArrayList<>();
    for (Lease lease : leases) {
      if (lease.completeRelease()) {
        releasing.add(lease); // else lost meanwhile: not ours to release
      }
    }
    LeaseException first = null;
    int chunk = rules.releasesPerStatement(Dialect.MAX_RENEWALS_PER_STATEMENT);
    for (int from = 0; from < releasing.size(); from += chunk) {
      List<Lease> batch = releasing.subList(from, Math.min(releasing.size(), from + chunk));
      if (batch.size() == 1) {
        LeaseException e = releaseOne(batch.get(0), rethrow);
        first = first == null ? e : first;
        continue;
      }
      List<Dialect.Held> held = new ArrayList<>(batch.size());
      long minTerm = Long.MAX_VALUE;
      long maxTerm = Long.MIN_VALUE;
      for (Lease l : batch) {
        held.add(new Dialect.Held(l.name(), l.holder(), l.term()));
        minTerm = Math.min(minTerm, l.term());
        maxTerm = Math.max(maxTerm, l.term());
      }
      int released;
      try {
        released =
            attempts.executeStep(
                "release " + batch.size() + " leases",
                (c, timeoutMs) -> dialect.releaseAll(c, held, timeoutMs),
                null);
      } catch (LeaseException e) {
        first = first == null ? e : first;
        log.warn(
            "could not release {} leases ({}); they ended here, and their release is retried until"
                + " their rows would expire",
            batch.size(),
            e.getMessage());
        for (Lease lease : batch) {
          releaseFailed(lease);
        }
        continue;
      }
      log.info(
          "released {} leases (terms {}..{}) instance {} in one statement{}",
          batch.size(),
          minTerm,
          maxTerm,
          instance,
          released == batch.size()
              ? ""
              : "; the database no longer had " + (batch.size() - released) + " of them");
      for (Lease lease : batch) {
        log.debug("released lease {} term {} instance {}", lease.name(), lease.term(), instance);
        manager.safely(l -> l.released(lease));
      }
    }
    return first;
  }

  /** The release statement of one lease already marked released; its failure, if any. */
  private LeaseException releaseOne(Lease lease, boolean rethrow) {
    boolean released;
    try {
      released = releaseInDatabase(lease);
    } catch (LeaseException e) {
      releaseFailed(lease, e);
      return e;
    }
    log.info(
        "released lease {} term {} instance {}{}",
        lease.name(),
        lease.term(),
        instance,
        released ? "" : " (the database no longer had it)");
    manager.safely(l -> l.released(lease));
    return null;
  }

  /**
   * {@link #transfer} of many leases to one successor (a group moving keys to the member that needs
   * them), in the order of a release: stops the work bound to all of them (interrupts, waits up to
   * one grace period), ends them here, then one transfer statement per {@link
   * Dialect#MAX_RENEWALS_PER_STATEMENT} leases ({@link Dialect#transferAll}); one INFO line per
   * batch, a DEBUG line and {@link LeaseListener#transferred} per lease. A batch whose statement
   * failed is logged: its rows are either transferred or expire as usual.
   *
   * @return the new term of each lease transferred, by name
   */
  java.util.Map<String, Long> transferAll(
      Collection<Lease> leases, String successor, Duration adoptWithin) {
    List<Lease> ours = new ArrayList<>();
    List<List<BoundWork>> stopping = new ArrayList<>();
    for (Lease l : leases) {
      List<BoundWork> works = l.beginRelease();
      if (works != null) {
        ours.add(l);
        stopping.add(works);
      }
    }
    boolean interrupted = stopWork(stopping);
    java.util.Map<String, Long> transferred = new java.util.HashMap<>();
    try {
      List<Lease> moving = new ArrayList<>();
      for (int i = 0; i < ours.size(); i++) {
        Lease lease = ours.get(i);
        endWork(lease, stopping.get(i), true);
        if (lease.completeRelease()) {
          moving.add(lease); // else lost meanwhile: not ours to hand over
        }
      }
      long adoptMs = adoptWithin.toMillis();
      int chunk = Dialect.MAX_RENEWALS_PER_STATEMENT;
      for (int from = 0; from < moving.size(); from += chunk) {
        List<Lease> batch = moving.subList(from, Math.min(moving.size(), from + chunk));
        List<Dialect.Held> held = new ArrayList<>(batch.size());
        for (Lease l : batch) {
          held.add(new Dialect.Held(l.name(), l.holder(), l.term()));
        }
        java.util.Map<String, Long> terms;
        try {
          terms =
              attempts.executeStep(
                  "transfer " + batch.size() + " leases to " + successor,
                  (c, timeoutMs) -> dialect.transferAll(c, held, successor, adoptMs, timeoutMs),
                  null);
        } catch (LeaseException e) {
          log.warn(
              "could not transfer {} leases to {}; each is transferred or expires as usual: {}",
              batch.size(),
              successor,
              e.getMessage());
          continue;
        }
        log.info(
            "transferred {} leases instance {} to {} in one statement (adopt within {} ms){}",
            terms.size(),
            instance,
            successor,
            adoptMs,
            terms.size() == batch.size()
                ? ""
                : "; the database no longer had " + (batch.size() - terms.size()) + " of them");
        for (Lease lease : batch) {
          Long newTerm = terms.get(lease.name());
          if (newTerm == null) {
            continue;
          }
          transferred.put(lease.name(), newTerm);
          log.debug(
              "transferred lease {} term {} instance {} to {} at term {}",
              lease.name(),
              lease.term(),
              instance,
              successor,
              newTerm);
          manager.safely(l -> l.transferred(lease, successor, newTerm));
        }
      }
      return transferred;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Transfers {@code lease} to {@code successor} in the order of a release: stops the work bound to
   * it (interrupts, waits up to the grace period), ends the lease here (keeper stopped), then runs
   * the transfer statement, which fences this holder as a claim of the next term would.
   *
   * @return the new term, or null if the lease was not ours any more (ended, being released, or the
   *     database no longer had it)
   */
  Long transfer(Lease lease, String successor, Duration adoptWithin) {
    List<BoundWork> works = lease.beginRelease();
    if (works == null) {
      return null;
    }
    boolean interrupted = stopWork(List.of(works));
    try {
      endWork(lease, works, true);
      if (!lease.completeRelease()) {
        return null; // lost meanwhile: not ours to hand over
      }
      long adoptMs = adoptWithin.toMillis();
      Long newTerm =
          attempts.executeStep(
              "transfer lease " + lease.name() + " to " + successor,
              (c, timeoutMs) ->
                  dialect.transferStep(
                      c, lease.name(), lease.holder(), lease.term(), successor, adoptMs, timeoutMs),
              null);
      if (newTerm == null) {
        log.warn(
            "could not transfer lease {} term {} instance {} to {}: the database no longer had it",
            lease.name(),
            lease.term(),
            instance,
            successor);
        return null;
      }
      log.info(
          "transferred lease {} term {} instance {} to {} at term {} (adopt within {} ms)",
          lease.name(),
          lease.term(),
          instance,
          successor,
          newTerm,
          adoptMs);
      manager.safely(l -> l.transferred(lease, successor, newTerm));
      return newTerm;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Marks {@code leases} released and runs their release statements. */
  private LeaseException giveBack(List<Lease> leases, boolean rethrow) {
    LeaseException first = null;
    for (Lease lease : leases) {
      if (!lease.completeRelease()) {
        continue; // lost meanwhile: not ours to release
      }
      boolean released;
      try {
        released = releaseInDatabase(lease);
      } catch (LeaseException e) {
        if (first == null) {
          first = e;
        }
        releaseFailed(lease, e);
        continue;
      }
      log.info(
          "released lease {} term {} instance {}{}",
          lease.name(),
          lease.term(),
          instance,
          released ? "" : " (the database no longer had it)");
      manager.safely(l -> l.released(lease));
    }
    return first;
  }

  private void releaseFailed(Lease lease, LeaseException e) {
    log.warn(
        "could not release lease {} term {} instance {} ({}); it ended here, and its release is"
            + " retried until its row would expire",
        lease.name(),
        lease.term(),
        instance,
        e.getMessage());
    releaseFailed(lease);
  }

  /**
   * A release whose statement did not reach the database (a failover, an outage): the lease ended
   * here all the same (its work stopped, its fenced transactions refused), so listeners and meters
   * hear of it now, once; and the statement is tried again every renew interval until the row would
   * expire by itself (the lease's duration from now at most), so that a server back within the
   * lease (a promoted replica) frees the name at once instead of at its expiry.
   */
  private void releaseFailed(Lease lease) {
    manager.safely(l -> l.released(lease));
    long giveUp = manager.clock().nanoTime() + timings.leaseDuration().toNanos();
    retryRelease(lease, giveUp);
  }

  private void retryRelease(Lease lease, long giveUpNanos) {
    long delay = timings.renewInterval().toNanos();
    if (manager.clock().nanoTime() + delay - giveUpNanos > 0) {
      return; // the row has expired by then: nothing left to free
    }
    Runnable retry =
        () ->
            attempts
                .submitStep(
                    "release lease " + lease.name() + " again",
                    releaseCall(lease.name(), lease.holder(), lease.term()),
                    null)
                .whenComplete(
                    (released, error) -> {
                      if (error == null) {
                        log.info(
                            "released lease {} term {} instance {} on a retry{}",
                            lease.name(),
                            lease.term(),
                            instance,
                            Boolean.TRUE.equals(released)
                                ? ""
                                : " (the database no longer had it)");
                      } else {
                        retryRelease(lease, giveUpNanos);
                      }
                    });
    try {
      scheduler.schedule(retry, delay, java.util.concurrent.TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // the manager closed: the row expires by itself
    }
  }

  private boolean releaseInDatabase(Lease lease) {
    return attempts.executeStep(
        "release lease " + lease.name(),
        releaseCall(lease.name(), lease.holder(), lease.term()),
        null);
  }

  /**
   * The rest of a loss, off the thread that found it (a keeper thread, or the application's thread
   * that asked {@link Lease#isHeld()}): the onLoss callbacks and the listeners on one task of the
   * loss executor; the grace period on another, then the failure policy if work still runs, else (a
   * loss at the local deadline) the release of the row, so a successor need not wait for it to
   * expire. The grace period is timed on the loss executor, not on the keeper's scheduler, so it
   * still ends in the failure policy when close() stopped the scheduler.
   */
  void handleLoss(Lease lease, LossReason reason, List<BoundWork> works) {
    Runnable callbacks =
        () -> {
          lease.runLossCallbacks();
          manager.safely(l -> l.lost(lease, reason));
        };
    rules.dispatchLoss(callbacks, this::onLossExecutor);
    boolean releaseRow = reason == LossReason.LOCAL_DEADLINE && rules.releasesAtDeadline();
    if (works.isEmpty()) {
      if (releaseRow) {
        releaseLost(lease);
      }
      return;
    }
    long graceNanos = timings.gracePeriod().toNanos();
    Runnable policyIfWorkRuns =
        () ->
            works.stream()
                .filter(w -> !w.hasEnded())
                .findFirst()
                .ifPresent(w -> runPolicy(lease, w.thread));
    rules.timeGrace(
        () -> graceOnLossExecutor(lease, works, releaseRow),
        scheduler,
        graceNanos,
        policyIfWorkRuns);
  }

  /** The grace period after a loss, on the loss executor: then the policy, or the release. */
  private void graceOnLossExecutor(Lease lease, List<BoundWork> works, boolean releaseRow) {
    long graceNanos = timings.gracePeriod().toNanos();
    onLossExecutor(
        () -> {
          long deadline = System.nanoTime() + graceNanos;
          boolean allStopped = true;
          for (BoundWork w : works) {
            if (!awaitQuietly(w, deadline - System.nanoTime())) {
              // still running under a lost lease: the failure policy decides (once per lease);
              // the row is not released while the work may still act under it
              allStopped = false;
              runPolicy(lease, w.thread);
            }
          }
          if (allStopped && releaseRow) {
            releaseLost(lease);
          }
        });
  }

  private void onLossExecutor(Runnable task) {
    try {
      lossExecutor.execute(task);
    } catch (RejectedExecutionException e) {
      // closed: the loss still gets its handling, on a thread of its own
      Thread t = new Thread(task, "lease-loss-after-close");
      t.setDaemon(true);
      t.start();
    }
  }

  void runPolicy(Lease lease, Thread worker) {
    if (!lease.claimPolicyRun()) {
      return;
    }
    try {
      failurePolicy.workDidNotStop(lease, worker);
    } catch (RuntimeException e) {
      log.error("failure policy for {} failed", lease, e);
    }
  }

  /**
   * Releases a lease lost at its local deadline: the database may still have it as ours (the local
   * deadline comes before the expiry), and the release statement checks holder and term, so it can
   * only give back our own claim. Best effort, bounded by the attempt timeout, never waited for.
   */
  private void releaseLost(Lease lease) {
    attempts
        .submitStep(
            "release lost lease " + lease.name(),
            releaseCall(lease.name(), lease.holder(), lease.term()),
            null)
        .whenComplete(
            (released, e) -> {
              if (e != null) {
                log.debug(
                    "could not release lost lease {} term {}; it expires by itself: {}",
                    lease.name(),
                    lease.term(),
                    e.getMessage());
              } else if (released) {
                log.info(
                    "released lost lease {} term {} instance {}: a successor may claim it now",
                    lease.name(),
                    lease.term(),
                    instance);
              }
            });
  }

  /** A claim that completed after its caller gave up: nobody holds it, so give it back. */
  void releaseOrphan(String name, String holder, long term) {
    log.warn(
        "the claim of lease {} term {} completed after its attempt timed out; releasing it",
        name,
        term);
    attempts.submitStep("release orphaned claim of " + name, releaseCall(name, holder, term), null);
  }

  static boolean awaitQuietly(BoundWork w, long nanos) {
    boolean interrupted = false;
    long deadline = System.nanoTime() + nanos;
    try {
      while (true) {
        try {
          return w.awaitEnd(deadline - System.nanoTime());
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** The release statement of {@code lease}, one bounded step. */
  private Dialect.StepCall<Boolean> releaseCall(String name, String holder, long term) {
    return (c, timeoutMs) -> dialect.releaseStep(c, name, holder, term, timeoutMs);
  }
}
