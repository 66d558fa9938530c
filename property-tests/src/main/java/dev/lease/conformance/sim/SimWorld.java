package dev.lease.conformance.sim;

import dev.lease.conformance.Mutations;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.LossReason;
import dev.lease.core.internal.LeaseInternals;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * A simulated cluster: processes with their own clocks, faults and connections, one SQLite database
 * whose clock is the true time plus its steps, and the checks of the invariants run after every
 * step. One world is reused for many schedules ({@link #start}); it runs on one thread.
 *
 * <p>Everything a process does goes through the real lease-core (claims, the keeper's renewals,
 * verify, release) and, for business transactions, the real lease-jdbc {@code FencedDataSource} in
 * STRICT mode on the process's own connections. A transaction runs in steps (the verify with the
 * first statement, each row, the commit) with time between them, so pauses, other processes'
 * claims, database clock steps and the keeper's loss can fall between any two. Statements wait in
 * virtual time (a delayed request, a stalled database, SQLite's write lock held by another
 * process), and while one waits the rest of the world runs; a loss that lease-jdbc turns into a
 * cancel interrupts it.
 */
public final class SimWorld implements AutoCloseable {

  public static final String NAME = "job";
  static final int ROWS = 2;
  private static final int TRACE = 40;

  /** How often a waiting statement lets the rest of the world run (and retries a busy one). */
  static final long SLICE_NANOS = 10_000_000L;

  /** What a protocol call returned. */
  enum Outcome {
    OK,
    REFUSED,
    POISONED,
    ERROR,
    SKIPPED
  }

  /** What happened over all schedules of this world: the counts the properties assert. */
  static final class Stats {
    long takeovers;
    long takeoversWithCommitsOnBothSides;
    long committed;
    long refusedByDatabase;
    long refusedLocally;
    long poisonedByLoss;
    long cancelledByLoss;

    /** Claim attempts that met SQLite's lock while a verified transaction was open: info. */
    long claimsThatWaitedForAVerifiedTransaction;

    /** Distinct verified transactions that held back at least one claim (issue 38): info. */
    long verifiedTransactionsThatHeldBackAClaim;

    /**
     * Claims that met another process's verified transaction's lock, waited, and then took the
     * lease: the successor's claim ordered after the old term's verified transaction (issue 38).
     */
    long takeoversThatWaitedForAVerifiedTransaction;

    long transactionsOpenAcrossAPause;
    long databaseStepsForward;
    long databaseStepsBack;
    long leasesLostAtTheLocalDeadline;
    // transfers (issue 23)
    long transfers;
    long transfersAdopted;
    long transfersExpiredUnadopted;
    long transfersWithATransactionOfTheOldTermOpen;
    long transfersThatWaitedForAVerifiedTransaction;
    long claimsRefusedWhileTransferredToAnother;
    long transfersNotHeldAnyMore;
    long transfersFailed;
  }

  /** A unit of JDBC work of a statement proxy. */
  @FunctionalInterface
  interface Call {
    Object call() throws Throwable;
  }

  final EventLoop loop = new EventLoop();
  final SimDatabase db;
  final SimOptions options;
  final LeaseTimings timings;
  final Mutations mutations;
  final List<SimProcess> processes = new ArrayList<>();
  final Stats stats = new Stats();
  long stallUntil;
  long faults;

  private final Map<Long, String> holderOfTerm = new HashMap<>();
  final SimTransfers transfers = new SimTransfers(this);
  private final SimStatements statements = new SimStatements(this);
  final SimTransactions transactions = new SimTransactions(this);
  private final List<long[]> databaseSteps = new ArrayList<>();
  private final Deque<Object[]> trace = new ArrayDeque<>();
  private long maxClaimedTerm;
  private long lastRowTerm;
  private long scheduleEndNanos;
  private int depth;
  private String violation;

  public SimWorld(SimOptions options) {
    this.options = options;
    this.timings = options.timings;
    this.mutations = Mutations.of(options.mutations);
    try {
      this.db = new SimDatabase(loop);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot open the simulation's SQLite database", e);
    }
  }

  /** Starts a new schedule of {@code durationMs} with one process per entry of {@code rates}. */
  void start(List<Double> rates, long durationMs) {
    processes.forEach(SimProcess::closeAll);
    processes.clear();
    loop.clear();
    holderOfTerm.clear();
    transfers.clear();
    transactions.clear();
    databaseSteps.clear();
    trace.clear();
    maxClaimedTerm = 0;
    lastRowTerm = 0;
    faults = 0;
    stallUntil = 0;
    depth = 0;
    violation = null;
    scheduleEndNanos = durationMs * 1_000_000L;
    try {
      db.reset();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    for (int i = 0; i < rates.size(); i++) {
      // each process's clock has its own arbitrary origin (skew), as System.nanoTime has
      long origin = (i * 7_919L - 13_000L) * 1_000_000_000L;
      ProcessClock clock = options.clocks.create(() -> loop.now, origin, rates.get(i));
      SimProcess p = new SimProcess(this, i, clock);
      LeaseManager.Builder builder =
          LeaseManager.builder(p.dataSource)
              .table(SimDatabase.TABLE)
              .instance(p.instance())
              .timings(timings)
              .failurePolicy(FailurePolicy.logOnly())
              .createTableIfMissing();
      // the keeper, its attempts and loss handling on the event loop, the database clock virtual
      LeaseInternals.clock(builder, clock);
      // attempts time out by virtual time too: a real-time stall of this JVM (a loaded machine)
      // timed out a release the model expected to run, and the run was no longer replayable
      LeaseInternals.attemptClock(builder, () -> loop.now);
      LeaseInternals.scheduler(builder, p.scheduler);
      LeaseInternals.attemptExecutor(builder, Runnable::run);
      LeaseInternals.lossExecutor(builder, Runnable::run);
      LeaseInternals.clockFunctionForTesting(builder, SimDatabase.CLOCK_FUNCTION);
      p.manager = builder.build();
      processes.add(p);
    }
  }

  /** The first invariant violation of this schedule, or null. */
  String violation() {
    return violation;
  }

  /** The last steps of this schedule, oldest first: what a failure report shows. */
  List<String> trace() {
    return trace.stream().map(n -> String.format("%7.1f ms  %s", (Long) n[0] / 1e6, n[1])).toList();
  }

  /** Forgets the trace (a schedule of another property starts). */
  void clearTrace() {
    trace.clear();
  }

  void note(String what) {
    if (trace.size() == TRACE) {
      trace.removeFirst();
    }
    trace.addLast(new Object[] {loop.now, what});
  }

  void violate(String what) {
    if (violation == null) {
      violation = what;
      note("VIOLATION " + what);
    }
  }

  /** Runs the schedule's events up to its end, checking the invariants after each. */
  void runToEnd() {
    loop.runUntil(scheduleEndNanos, this::check);
    checkBusinessTable();
    countHandOvers();
    transfers.countExpired();
  }

  // ---- the protocol, as a process calls it ------------------------------------------------------

  Outcome claim(SimProcess p) {
    try {
      p.claimWaited = false;
      Optional<Lease> claimed = p.manager.tryClaim(NAME);
      if (claimed.isPresent() && p.claimWaited) {
        stats.takeoversThatWaitedForAVerifiedTransaction++;
      }
      if (claimed.isEmpty()) {
        SimTransfers.Transfer pending = transfers.pending();
        if (pending != null && !pending.successor.equals(p.instance())) {
          stats.claimsRefusedWhileTransferredToAnother++;
          note(
              p
                  + " claim: refused, term "
                  + pending.term
                  + " is transferred to "
                  + pending.successor);
        } else {
          note(p + " claim: held by another");
        }
        return Outcome.REFUSED;
      }
      return claimed(p, claimed.get());
    } catch (LeaseException e) {
      note(p + " claim failed: " + e.getMessage());
      return Outcome.ERROR;
    }
  }

  /**
   * {@code p} adopts a lease transferred to it ({@link LeaseManager#tryAdopt}), if there is one.
   */
  Outcome adopt(SimProcess p) {
    try {
      Optional<Lease> adopted = p.manager.tryAdopt(NAME);
      if (adopted.isEmpty()) {
        note(p + " adopt: nothing transferred to it");
        return Outcome.REFUSED;
      }
      return claimed(p, adopted.get());
    } catch (LeaseException e) {
      note(p + " adopt failed: " + e.getMessage());
      return Outcome.ERROR;
    }
  }

  /** Records a lease {@code p} claimed or adopted, and checks invariant 1 for it. */
  private Outcome claimed(SimProcess p, Lease lease) {
    p.leases.add(lease);
    lease.onLoss(
        l -> {
          if (l.lossReason().orElse(null) == LossReason.LOCAL_DEADLINE) {
            stats.leasesLostAtTheLocalDeadline++;
          }
          note(p + " lost term " + l.term() + " (" + l.lossReason().orElse(null) + ")");
        });
    note(p + " claimed term " + lease.term());
    if (maxClaimedTerm > 0) {
      stats.takeovers++; // a hand-over (the first claim of a schedule is none)
    }
    String previous = holderOfTerm.putIfAbsent(lease.term(), lease.holder());
    if (previous != null) {
      violate(
          "invariant 1: term "
              + lease.term()
              + " was claimed twice, by "
              + previous.substring(0, 8)
              + "… and by "
              + p
              + " ("
              + lease.holder().substring(0, 8)
              + "…)");
    } else if (lease.term() <= maxClaimedTerm) {
      violate(
          "invariant 1: term "
              + lease.term()
              + " claimed by "
              + p
              + " after term "
              + maxClaimedTerm
              + ": terms must only grow");
    }
    maxClaimedTerm = Math.max(maxClaimedTerm, lease.term());
    return Outcome.OK;
  }

  Outcome renew(SimProcess p) {
    Lease lease = p.lease();
    if (lease == null) {
      return Outcome.SKIPPED;
    }
    try {
      boolean ok = lease.renew();
      note(p + " renew term " + lease.term() + ": " + (ok ? "renewed" : "not held"));
      return ok ? Outcome.OK : Outcome.REFUSED;
    } catch (LeaseException e) {
      note(p + " renew failed: " + e.getMessage());
      return Outcome.ERROR;
    }
  }

  Outcome verify(SimProcess p) {
    Lease lease = p.lease();
    if (lease == null) {
      return Outcome.SKIPPED;
    }
    try {
      boolean ok = lease.verify();
      note(p + " verify term " + lease.term() + ": " + ok);
      return ok ? Outcome.OK : Outcome.REFUSED;
    } catch (LeaseException e) {
      note(p + " verify failed: " + e.getMessage());
      return Outcome.ERROR;
    }
  }

  Outcome release(SimProcess p) {
    Lease lease = p.lease();
    if (lease == null) {
      return Outcome.SKIPPED;
    }
    try {
      lease.release();
      note(p + " released term " + lease.term());
      return Outcome.OK;
    } catch (LeaseException e) {
      note(p + " release failed: " + e.getMessage());
      return Outcome.ERROR;
    }
  }

  /** {@code p} hands its lease to {@code to} ({@link Lease#transferTo}, issue 23). */
  Outcome transfer(SimProcess p, SimProcess to) {
    Lease lease = p.lease();
    if (lease == null) {
      return Outcome.SKIPPED;
    }
    return transfer(p, lease, to.instance(), timings.leaseDuration().toMillis());
  }

  /**
   * {@code p} hands {@code lease} to the instance {@code successor} (perhaps no live process), to
   * be adopted within {@code adoptWithinMs} by the database clock. It may run on another thread of
   * {@code p} than its worker (a deploy's shutdown hook), while a transaction of the lease is open.
   */
  Outcome transfer(SimProcess p, Lease lease, String successor, long adoptWithinMs) {
    boolean transactionOpen =
        p.openTxn != null && p.openTxn.lease == lease && p.hasVerifiedTransaction();
    p.transferringTerm = lease.term();
    p.transferringTo = successor;
    p.transferAdoptWithinMs = adoptWithinMs;
    p.transferWaited = false;
    try {
      boolean done = lease.transferTo(successor, Duration.ofMillis(adoptWithinMs));
      note(
          p
              + (done
                  ? " transferred term "
                      + lease.term()
                      + " to "
                      + successor
                      + " (adopt within "
                      + adoptWithinMs
                      + " ms)"
                      + (transactionOpen ? " with a verified transaction of its term open" : "")
                  : " could not transfer term " + lease.term() + ": not held any more"));
      if (done && transactionOpen) {
        stats.transfersWithATransactionOfTheOldTermOpen++;
      }
      if (done && p.transferWaited) {
        stats.transfersThatWaitedForAVerifiedTransaction++;
      }
      if (!done) {
        stats.transfersNotHeldAnyMore++;
      }
      return done ? Outcome.OK : Outcome.REFUSED;
    } catch (LeaseException e) {
      stats.transfersFailed++;
      note(p + " transfer failed: " + e.getMessage());
      return Outcome.ERROR;
    } finally {
      p.transferringTo = null;
    }
  }

  /**
   * A statement of {@code p} that may have written the lease row is closed, which commits it
   * (SQLite's autocommit ends with the statement): the transfer invariants ({@link SimTransfers}).
   */
  void statementClosed(SimConnection.Stmt s) {
    transfers.statementClosed(s);
  }

  /** The database server's clock steps by {@code ms} (NTP on the server), forward or back. */
  void stepDatabaseClock(long ms) {
    db.offsetMs += ms;
    databaseSteps.add(new long[] {loop.now, ms});
    if (ms > 0) {
      stats.databaseStepsForward++;
    } else if (ms < 0) {
      stats.databaseStepsBack++;
    }
    note("database clock " + (ms >= 0 ? "+" : "") + ms + " ms");
  }

  // ---- business transactions through lease-jdbc ({@link SimTransactions}) ----------------------

  /** Starts a business transaction under the process's lease ({@link SimTransactions#begin}). */
  void beginTransaction(SimProcess p, boolean failMidway, int[] gapsMs, Runnable onEnd) {
    transactions.begin(p, failMidway, gapsMs, onEnd);
  }

  /** A whole business transaction now, step after step (the model's transaction). */
  Outcome transactionNow(SimProcess p) {
    return transactions.now(p);
  }

  // ---- statements in virtual time ---------------------------------------------------------------

  /** Runs one statement of a process's connection in virtual time ({@link SimStatements}). */
  Object execute(SimConnection.Stmt s, String sql, Call call) throws Throwable {
    return statements.execute(s, sql, call);
  }

  /**
   * Lets {@code nanos} of the process's running time pass inside a statement while the rest of the
   * world runs (one level deep: a statement waiting inside another's wait only lets time pass).
   * Time the process spends paused does not count: its waiting stops with it.
   */
  void await(SimProcess owner, long nanos, BooleanSupplier stop) {
    if (nanos <= 0) {
      return;
    }
    if (depth > 0) {
      loop.pass(nanos);
      return;
    }
    depth++;
    try {
      long left = nanos;
      long limit = scheduleEndNanos + 60_000_000_000L;
      while (left > 0 && !stop.getAsBoolean() && !owner.crashed && loop.now < limit) {
        long before = loop.now;
        boolean paused = owner.paused;
        loop.runUntil(loop.now + Math.min(left, SLICE_NANOS), this::check);
        if (!paused) {
          left -= loop.now - before;
        }
      }
    } finally {
      depth--;
    }
  }

  // ---- the invariants ---------------------------------------------------------------------------

  /**
   * Invariants 1 and 2 against the database as it is now: terms never go back, and every lease
   * whose holder's local deadline has not passed is the database's current, unexpired holder,
   * unless the database clock stepped forward, within the last lease duration, by more than the
   * margin the timings leave (the README's promise about database clock steps).
   */
  void check() {
    if (violation != null) {
      return;
    }
    SimDatabase.Row row;
    try {
      row = db.row(NAME);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    long now = db.nowMs();
    if (row.term() < lastRowTerm) {
      violate(
          "invariant 1: the database's term went back from " + lastRowTerm + " to " + row.term());
    }
    lastRowTerm = row.term();
    if (databaseStepsExcuse()) {
      return;
    }
    for (SimProcess p : processes) {
      for (Lease lease : p.leases) {
        Duration left = lease.remaining();
        if (left.isZero()) {
          continue;
        }
        boolean current = row.holder().equals(lease.holder()) && row.term() == lease.term();
        if (!current || row.expiresAtMs() <= now) {
          violate(
              "invariant 2: "
                  + p
                  + " believes it holds term "
                  + lease.term()
                  + " for another "
                  + left.toMillis()
                  + " ms by its clock, but the database "
                  + (current
                      ? "let it expire " + (now - row.expiresAtMs()) + " ms ago"
                      : "names term " + row.term() + " of " + row.instance()));
        }
      }
    }
  }

  /**
   * A forward step of the database clock shortens every lease by the step; the local deadline still
   * passes first while the steps of the last lease duration add up to less than {@code
   * leaseDuration - localDeadline / (1 - maxClockRateError)}.
   */
  private boolean databaseStepsExcuse() {
    if (databaseSteps.isEmpty()) {
      return false;
    }
    long window = timings.leaseDuration().toNanos();
    long marginNanos =
        timings.leaseDuration().toNanos()
            - (long) (timings.localDeadline().toNanos() / (1 - timings.maxClockRateError()));
    long forward = 0;
    for (long[] s : databaseSteps) {
      if (s[1] > 0 && loop.now - s[0] < window) {
        forward += s[1] * 1_000_000L;
      }
    }
    return forward > marginNanos;
  }

  /** Invariant 4 over the whole business table. */
  void checkBusinessTable() {
    if (violation != null) {
      return;
    }
    try {
      String half = db.halfApplied(ROWS);
      if (half != null) {
        violate("invariant 4: " + half);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Hand-overs with commits under the old term and under the new one. */
  private void countHandOvers() {
    Long previous = null;
    for (long term : holderOfTerm.keySet().stream().sorted().toList()) {
      if (previous != null
          && transactions.commitsOfTerm(previous) > 0
          && transactions.commitsOfTerm(term) > 0) {
        stats.takeoversWithCommitsOnBothSides++;
      }
      previous = term;
    }
  }

  long dbNowMs() {
    return db.nowMs();
  }

  SimDatabase.Row row() {
    try {
      return db.row(NAME);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    processes.forEach(SimProcess::closeAll);
    try {
      db.close();
    } catch (SQLException e) {
      // a temporary file: removed with its directory
    }
  }
}
