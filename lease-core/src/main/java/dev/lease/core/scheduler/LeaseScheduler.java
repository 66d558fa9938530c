package dev.lease.core.scheduler;

import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseListener;
import dev.lease.core.LeaseManager;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs jobs on a schedule across replicas: every replica runs the same scheduler, and each instant
 * of a job's schedule runs once across all of them.
 *
 * <pre>{@code
 * LeaseScheduler scheduler = LeaseScheduler.builder(leases)
 *     .job("hourly-report", Schedule.fixedRate(Duration.ofHours(1), Instant.EPOCH),
 *         round -> reports.run(round.instant()))
 *     .build();
 * scheduler.start();
 * }</pre>
 *
 * <p>How (the scheduler of DESIGN.md): a job's name is a lease, claimed per instant with a
 * statement that succeeds only if the name is free and the instant is later than the last one on
 * record, which the claim then records. Due instants are computed from the database clock, never
 * the process's, so replicas whose clocks disagree still agree on which instant is due. The round
 * runs under the lease ({@link LeaseManager#runUnder}: renewed, bound to the round's thread so
 * fenced transactions are verified, interrupted if lost) and is then finished. A round cut short
 * (lease lost, process died, scheduler closed) stays unfinished and runs again once, on any
 * replica, as long as no later instant is due; cut short again, or overtaken by a later instant, it
 * is given up and reported ({@link LeaseListener#instantSuperseded}). Instants a long round
 * overran, and instants no replica claimed in time, are skipped ({@link
 * LeaseListener#instantSkipped}), never run late in a burst.
 *
 * <p>Every replica polls all its jobs' rows in one statement every {@link Builder#pollInterval}
 * (and wakes for the next due instant), so an instant starts within about one poll interval of
 * coming due. Close the scheduler before its {@link LeaseManager}.
 */
public final class LeaseScheduler implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaseScheduler.class);

  private final LeaseManager manager;
  private final List<JobRunner> jobs;
  private final List<List<String>> nameChunks;
  private final long pollNanos;
  private final SchedulerRules rules;
  private final LongSupplier dueClock;
  private final ExecutorService attempts;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wakeUp = lock.newCondition();

  // guarded by lock
  private boolean woken;
  private boolean started;
  private volatile boolean closing;
  private Thread poller;

  private LeaseScheduler(Builder b) {
    this.manager = b.manager;
    this.pollNanos = b.pollInterval.toNanos();
    this.rules = b.rules;
    this.dueClock = b.dueClock;
    List<JobRunner> runners = new ArrayList<>();
    for (ScheduledJob job : b.jobs) {
      runners.add(new JobRunner(job, this, manager));
    }
    this.jobs = List.copyOf(runners);
    List<List<String>> chunks = new ArrayList<>();
    for (int i = 0; i < jobs.size(); i += Dialect.MAX_NAMES_PER_STATEMENT) {
      chunks.add(
          jobs.subList(i, Math.min(jobs.size(), i + Dialect.MAX_NAMES_PER_STATEMENT)).stream()
              .map(JobRunner::name)
              .toList());
    }
    this.nameChunks = List.copyOf(chunks);
    AtomicInteger n = new AtomicInteger();
    String prefix = "lease-scheduler-" + manager.instance() + "-";
    this.attempts =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, prefix + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  public static Builder builder(LeaseManager manager) {
    return new Builder(manager);
  }

  /**
   * Creates the jobs' rows, reads the last instant on record of each (a job that never ran starts
   * at its first instant from now on; one that ran runs the latest instant it missed, once) and
   * starts polling.
   *
   * @throws LeaseException if the database cannot be reached
   * @throws IllegalStateException if already started or closed
   */
  public void start() {
    lock.lock();
    try {
      if (started || closing) {
        throw new IllegalStateException("a LeaseScheduler starts once; build a new one");
      }
      started = true;
    } finally {
      lock.unlock();
    }
    for (JobRunner job : jobs) {
      job.start();
    }
    Thread t = new Thread(this::poll, "lease-scheduler-poll-" + manager.instance());
    t.setDaemon(true);
    lock.lock();
    try {
      poller = t;
    } finally {
      lock.unlock();
    }
    t.start();
  }

  /**
   * Stops polling and cuts running rounds short, in the order every release follows: the rounds'
   * work is interrupted, the scheduler waits up to the lease's grace period for it to end, then
   * their leases are released (their instants stay unfinished, so they run again once, on this or
   * another replica). A round that does not stop within the grace period is left running and
   * logged: closing is not a loss, so the failure policy does not run and the JVM is not halted.
   * Does not close the {@link LeaseManager}. Idempotent.
   */
  @Override
  public void close() {
    Thread t;
    lock.lock();
    try {
      if (closing) {
        return;
      }
      closing = true;
      woken = true;
      wakeUp.signalAll();
      t = poller;
    } finally {
      lock.unlock();
    }
    List<Lease> rounds = new ArrayList<>();
    for (JobRunner job : jobs) {
      Lease lease = job.roundLease();
      if (lease != null) {
        rounds.add(lease);
      }
    }
    LeaseInternals.release(manager, rounds);
    attempts.shutdown();
    long waitMs =
        manager.timings().gracePeriod().toMillis()
            + 2 * manager.timings().attemptTimeout().toMillis();
    boolean interrupted = false;
    try {
      if (!attempts.awaitTermination(waitMs, TimeUnit.MILLISECONDS)) {
        log.warn(
            "scheduler of {}: rounds still running {} ms after close", manager.instance(), waitMs);
      }
      if (t != null && t != Thread.currentThread()) {
        t.join(waitMs);
      }
    } catch (InterruptedException e) {
      interrupted = true;
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "LeaseScheduler["
        + manager.instance()
        + ", jobs "
        + jobs.stream().map(JobRunner::name).toList()
        + "]";
  }

  // ---- package-private: what the job runners use
  // -------------------------------------------------

  boolean isClosing() {
    return closing;
  }

  SchedulerRules rules() {
    return rules;
  }

  /**
   * The time that decides which instant is due: the database's (the test fault: a process clock).
   */
  long dueTime(long databaseNowMs) {
    return dueClock != null ? dueClock.getAsLong() : databaseNowMs;
  }

  /** Makes the poller poll now (a round ended: the next instant may be claimable). */
  void wake() {
    lock.lock();
    try {
      woken = true;
      wakeUp.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void poll() {
    while (!closing) {
      if (LeaseInternals.isClosed(manager)) {
        // the manager released the rounds' leases without finishing them; stop claiming, and cut
        // the rounds still running short (their instants run again once on another replica)
        log.warn(
            "scheduler of {}: its LeaseManager was closed; closing the scheduler (close the"
                + " scheduler first)",
            manager.instance());
        close();
        return;
      }
      long waitNanos = pollNanos;
      try {
        for (List<String> names : nameChunks) {
          Dialect.SlotStates states =
              LeaseInternals.execute(
                  manager,
                  "read the slots of " + names.size() + " jobs",
                  c -> LeaseInternals.dialect(manager).slotStates(c, names));
          long now = dueTime(states.databaseNowMs());
          for (JobRunner job : jobs) {
            if (!names.contains(job.name())) {
              continue;
            }
            Long next = job.consider(states.byName().get(job.name()), now, attempts);
            if (next != null) {
              waitNanos = Math.min(waitNanos, Math.max(1, next - now) * 1_000_000L);
            }
          }
        }
      } catch (LeaseException e) {
        log.warn(
            "scheduler of {}: poll failed, retrying in {} ms: {}",
            manager.instance(),
            pollNanos / 1_000_000,
            e.getMessage());
      } catch (RuntimeException e) {
        log.error("scheduler of {}: poll failed", manager.instance(), e);
      }
      if (!awaitWake(waitNanos)) {
        // An interrupt of the poll thread is a request to stop (it is this scheduler's own
        // thread); polling on with the interrupt set would spin, every wait returning at once.
        log.warn(
            "scheduler of {}: its poll thread was interrupted; closing the scheduler",
            manager.instance());
        close();
        return;
      }
    }
  }

  /** Waits for the next poll; false if the poll thread was interrupted (the scheduler stops). */
  private boolean awaitWake(long nanos) {
    lock.lock();
    try {
      long left = nanos;
      while (!woken && !closing && left > 0) {
        left = wakeUp.awaitNanos(left);
      }
      woken = false;
      return true;
    } catch (InterruptedException e) {
      return rules.pollInterrupted();
    } finally {
      lock.unlock();
    }
  }

  /** Configures a {@link LeaseScheduler}; jobs are validated as they are added. */
  public static final class Builder {
    private final LeaseManager manager;
    private final List<ScheduledJob> jobs = new ArrayList<>();
    private final Set<String> names = new HashSet<>();
    private Duration pollInterval = Duration.ofSeconds(1);
    private SchedulerRules rules = SchedulerRules.PRODUCTION;
    private LongSupplier dueClock;

    private Builder(LeaseManager manager) {
      this.manager = Objects.requireNonNull(manager, "manager");
    }

    /**
     * Adds a job.
     *
     * @throws IllegalArgumentException if the name could never be claimed (empty, too long for the
     *     lease table, control characters) or is already a job of this scheduler
     */
    public Builder job(String name, Schedule schedule, ScheduledJob.Work work) {
      return job(ScheduledJob.of(name, schedule, work));
    }

    /** Adds a job; see {@link #job(String, Schedule, ScheduledJob.Work)}. */
    public Builder job(ScheduledJob job) {
      Objects.requireNonNull(job, "job");
      if (!names.add(job.name())) {
        throw new IllegalArgumentException(
            "job "
                + job.name()
                + " is already registered; give"
                + " each job of a scheduler its own name");
      }
      jobs.add(job);
      return this;
    }

    /**
     * How often every replica reads its jobs' rows (one statement for all jobs); default 1 s. It
     * also wakes for the next due instant, so this bounds how late a round starts after a round of
     * another replica ended or a lease expired.
     */
    public Builder pollInterval(Duration interval) {
      Objects.requireNonNull(interval, "pollInterval");
      if (interval.toMillis() < 1) {
        throw new IllegalArgumentException("pollInterval must be at least 1 ms, got " + interval);
      }
      this.pollInterval = interval;
      return this;
    }

    /** Test only: builds a scheduler with deliberately weakened rules (negative controls). */
    Builder rulesForTesting(SchedulerRules rules) {
      this.rules = Objects.requireNonNull(rules, "rules");
      return this;
    }

    /** Test only: decides due instants by {@code processClockMs} instead of the database clock. */
    Builder dueClockForTesting(LongSupplier processClockMs) {
      this.dueClock = processClockMs;
      return this;
    }

    /**
     * @throws IllegalArgumentException if no job was added
     */
    public LeaseScheduler build() {
      if (jobs.isEmpty()) {
        throw new IllegalArgumentException(
            "a LeaseScheduler needs at least one job; add one with" + " job(name, schedule, work)");
      }
      return new LeaseScheduler(this);
    }
  }
}
