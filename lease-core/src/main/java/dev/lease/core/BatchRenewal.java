package dev.lease.core;

import dev.lease.core.dialect.Dialect;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Renews every lease a manager keeps ({@link Lease#hold()}) with one statement per renew interval:
 * a pass starts every renew interval while the manager keeps any lease, and sends the leases in
 * chunks of {@link Dialect#MAX_RENEWALS_PER_STATEMENT}, each chunk one statement and one attempt
 * (bounded by the attempt timeout like any attempt; the chunks of a pass run side by side). The
 * statement returns the leases it renewed; for each lease of the chunk:
 *
 * <ul>
 *   <li>renewed: its local deadline now counts from the start of this pass ({@link
 *       Lease#renewed(long)});
 *   <li>not renewed (the database says it is no longer ours): lost, as a single renewal's false;
 *   <li>the statement failed or timed out: nothing is known, the lease is in the next pass, and its
 *       own deadline timer ends it at the local deadline if no pass renews it before.
 * </ul>
 *
 * A lease whose renewal is still in flight (a chunk that has not answered yet) sits out a pass. All
 * leases of a manager share its {@link LeaseTimings}, so one pass per renew interval serves them
 * all; leases with other timings belong to another manager, which has its own passes.
 */
final class BatchRenewal {

  private static final Logger log = LoggerFactory.getLogger(BatchRenewal.class);

  private final LeaseManager manager;
  private final long intervalNanos;
  private final long attemptTimeoutNanos;
  private final long leaseMs;
  private final Set<RenewalKeeper> keepers = ConcurrentHashMap.newKeySet();

  // guarded by this
  private ScheduledFuture<?> next;
  private long nextAt;

  BatchRenewal(LeaseManager manager) {
    this.manager = manager;
    LeaseTimings t = manager.timings();
    this.intervalNanos = t.renewInterval().toNanos();
    this.attemptTimeoutNanos = t.attemptTimeout().toNanos();
    this.leaseMs = t.leaseDuration().toMillis();
  }

  /**
   * Adds a lease to the passes. The next pass is moved earlier if this lease is due before it (a
   * lease held long after its claim is renewed at once, as it would have been by a timer of its
   * own).
   */
  void add(RenewalKeeper keeper) {
    keepers.add(keeper);
    long due = keeper.lease().lastRenewalStart() + intervalNanos;
    schedule(due, keeper);
  }

  void remove(RenewalKeeper keeper) {
    keepers.remove(keeper);
  }

  /** How many leases the passes renew now. */
  int size() {
    return keepers.size();
  }

  private void schedule(long atNanos, RenewalKeeper joining) {
    boolean rejected = false;
    synchronized (this) {
      if (next != null && !next.isDone() && nextAt - atNanos <= 0) {
        return; // the pass already scheduled comes first
      }
      if (next != null) {
        next.cancel(false);
      }
      long delay = Math.max(0, atNanos - manager.clock().nanoTime());
      try {
        next = manager.scheduler().schedule((Runnable) this::pass, delay, TimeUnit.NANOSECONDS);
        nextAt = atNanos;
      } catch (RejectedExecutionException e) {
        next = null;
        rejected = true;
      }
    }
    if (rejected) {
      // the scheduler was shut down: nothing can renew these leases any more
      if (joining != null) {
        joining.keeperGone();
      } else {
        keepers.forEach(RenewalKeeper::keeperGone);
      }
    }
  }

  /**
   * Starts a pass now, besides the scheduled ones (benchmarks: the time of one pass); the future
   * completes when every chunk of it answered, at once if no lease was due.
   */
  CompletableFuture<Void> passNow() {
    return pass();
  }

  /** On the scheduler: starts one pass and schedules the next; never waits for the database. */
  private CompletableFuture<Void> pass() {
    long start = manager.clock().nanoTime();
    synchronized (this) {
      next = null;
    }
    List<RenewalKeeper> due = new ArrayList<>();
    for (RenewalKeeper k : keepers) {
      if (!k.isStopped() && k.lease().held() && !k.lease().isRenewing()) {
        due.add(k);
      }
    }
    if (keepers.isEmpty()) {
      return CompletableFuture.completedFuture(null); // idle until a lease is added
    }
    boolean unbounded = !manager.rules().boundsAttempts();
    if (!unbounded) {
      schedule(start + intervalNanos, null);
    }
    if (due.isEmpty()) {
      if (unbounded) {
        schedule(start + intervalNanos, null);
      }
      return CompletableFuture.completedFuture(null);
    }
    for (RenewalKeeper k : due) {
      k.lease().renewalStarted();
    }
    Pass pass = new Pass(start, due.size(), unbounded);
    int chunk = manager.rules().renewalsPerStatement(Dialect.MAX_RENEWALS_PER_STATEMENT);
    for (int i = 0; i < due.size(); i += chunk) {
      renew(pass, due.subList(i, Math.min(due.size(), i + chunk)));
    }
    return pass.done;
  }

  /** One chunk: one statement (one attempt) for {@code chunk}. */
  private void renew(Pass pass, List<RenewalKeeper> chunk) {
    Dialect dialect = manager.dialect();
    List<Dialect.Held> held = new ArrayList<>(chunk.size());
    Map<RenewalKeeper, Dialect.Held> of = new HashMap<>();
    for (RenewalKeeper k : chunk) {
      Lease l = k.lease();
      Dialect.Held h = new Dialect.Held(l.name(), l.holder(), l.term());
      held.add(h);
      of.put(k, h);
    }
    String what =
        chunk.size() == 1
            ? "renew lease " + chunk.get(0).lease().name()
            : "renew " + chunk.size() + " leases";
    Dialect.StepCall<Set<Dialect.Held>> call =
        chunk.size() == 1
            ? (c, timeoutMs) -> {
              Dialect.Held h = held.get(0);
              return dialect.renewStep(c, h.name(), h.holder(), h.term(), leaseMs, timeoutMs)
                  ? Set.of(h)
                  : Set.of();
            }
            : (c, timeoutMs) -> dialect.renewAll(c, held, leaseMs, timeoutMs);
    if (pass.unbounded) {
      // the bug: the next pass waits for this one, however long its borrow blocks
      try {
        manager
            .attemptExecutor()
            .execute(
                () -> {
                  try {
                    done(
                        pass,
                        chunk,
                        of,
                        manager.attempts().executeStep(what, call, null),
                        null,
                        false);
                  } catch (RuntimeException e) {
                    done(pass, chunk, of, null, e, false);
                  }
                });
      } catch (RejectedExecutionException e) {
        chunk.forEach(k -> k.lease().renewalEnded());
      }
      return;
    }
    CompletableFuture<Set<Dialect.Held>> attempt = manager.attempts().submitStep(what, call, null);
    AtomicBoolean timedOut = new AtomicBoolean();
    ScheduledFuture<?> timeout = null;
    if (!attempt.isDone()) {
      try {
        timeout =
            manager
                .scheduler()
                .schedule(
                    () -> {
                      timedOut.set(!attempt.isDone());
                      manager.attempts().expire(attempt, what);
                    },
                    attemptTimeoutNanos,
                    TimeUnit.NANOSECONDS);
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
          done(pass, chunk, of, renewed, error, timedOut.get());
        });
  }

  private void done(
      Pass pass,
      List<RenewalKeeper> chunk,
      Map<RenewalKeeper, Dialect.Held> of,
      Set<Dialect.Held> renewed,
      Throwable error,
      boolean timedOut) {
    for (RenewalKeeper k : chunk) {
      RenewalOutcome outcome =
          k.attemptDone(
              pass.start, error == null ? renewed.contains(of.get(k)) : null, error, timedOut);
      switch (outcome) {
        case RENEWED -> pass.renewed.incrementAndGet();
        case LOST -> pass.lost.incrementAndGet();
        default -> pass.failed.incrementAndGet();
      }
    }
    if (pass.remaining.addAndGet(-chunk.size()) == 0) {
      Duration elapsed = Duration.ofNanos(manager.clock().nanoTime() - pass.start);
      log.debug(
          "renewal pass of {} leases: {} renewed, {} lost, {} failed in {} ms",
          pass.leases,
          pass.renewed,
          pass.lost,
          pass.failed,
          elapsed.toMillis());
      manager.safely(
          l ->
              l.renewalPass(
                  pass.leases, pass.renewed.get(), pass.lost.get(), pass.failed.get(), elapsed));
      if (pass.unbounded) {
        schedule(pass.start + intervalNanos, null);
      }
      pass.done.complete(null);
    }
  }

  /** The counts of one pass, completed by its chunks. */
  private static final class Pass {
    final long start;
    final int leases;
    final boolean unbounded;
    final AtomicInteger remaining;
    final AtomicInteger renewed = new AtomicInteger();
    final AtomicInteger lost = new AtomicInteger();
    final AtomicInteger failed = new AtomicInteger();
    final CompletableFuture<Void> done = new CompletableFuture<>();

    Pass(long start, int leases, boolean unbounded) {
      this.start = start;
      this.leases = leases;
      this.unbounded = unbounded;
      this.remaining = new AtomicInteger(leases);
    }
  }
}
