package dev.lease.conformance.sim;

import dev.lease.conformance.Mutation;
import dev.lease.conformance.Mutations;
import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.LossReason;
import dev.lease.core.dialect.Dialect;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.LeaseLostSQLException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLTimeoutException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

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
  private static final long SLICE_NANOS = 10_000_000L;

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

  /**
   * A transfer the database took (its statement wrote term {@code term}, pending for {@code
   * successor}) and what became of it: adopted by the successor at that term, or expired at the
   * bound by the database clock, with no other process holding the lease in between.
   */
  static final class Transfer {
    final long term;
    final String from;
    final String successor;
    final long boundMs;
    boolean adopted;
    boolean claimedAfterTheBound;

    Transfer(long term, String from, String successor, long boundMs) {
      this.term = term;
      this.from = from;
      this.successor = successor;
      this.boundMs = boundMs;
    }

    boolean unresolved() {
      return !adopted && !claimedAfterTheBound;
    }
  }

  /** A business transaction of {@link #ROWS} rows under a process's lease, run in steps. */
  final class BusinessTxn {
    final SimProcess process;
    final Lease lease;
    final long id;
    final boolean failMidway;
    Connection connection;
    int step;
    boolean pausedWhileOpen;

    BusinessTxn(SimProcess process, Lease lease, long id, boolean failMidway) {
      this.process = process;
      this.lease = lease;
      this.id = id;
      this.failMidway = failMidway;
    }
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
  private final List<Transfer> transfers = new ArrayList<>();
  private final Map<Long, Long> commitsOfTerm = new TreeMap<>();
  private final List<long[]> databaseSteps = new ArrayList<>();
  private final Deque<Object[]> trace = new ArrayDeque<>();
  private long maxClaimedTerm;
  private long lastRowTerm;
  private long txnSeq;
  private long scheduleEndNanos;
  private int depth;
  private String violation;

  /** How the last business transaction ended (the model's synchronous transaction reads it). */
  private Outcome lastOutcome;

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
    commitsOfTerm.clear();
    databaseSteps.clear();
    trace.clear();
    maxClaimedTerm = 0;
    lastRowTerm = 0;
    txnSeq = 0;
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

  private void violate(String what) {
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
    countTransfers();
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
        Transfer pending = pendingTransfer();
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

  /** The transfer of this schedule not adopted yet and within its bound by the database clock. */
  private Transfer pendingTransfer() {
    long now = db.nowMs();
    for (Transfer t : transfers) {
      if (t.unresolved() && now < t.boundMs) {
        return t;
      }
    }
    return null;
  }

  /**
   * The transfer invariants, when a statement of {@code p} that may have written the lease row (a
   * transfer, an adoption, a claim while a transfer is open) is closed, which commits it (SQLite's
   * autocommit ends with the statement), judged by the database clock it read ({@code now}): a
   * transfer the database took is recorded with its bound; the only process that may take the lease
   * until the bound passes is the successor, and only by adopting it at the transfer's term.
   */
  void statementClosed(SimConnection.Stmt s) {
    if (s.dbNowMs != Long.MIN_VALUE && s.sql != null) {
      observeTransfers(s.connection().process, s.sql, s.dbNowMs);
    }
  }

  private void observeTransfers(SimProcess p, String sql, long now) {
    boolean transfer = Mutation.isTransfer(sql);
    boolean adopt = Mutation.isAdopt(sql);
    if (!transfer && !adopt && transfers.stream().noneMatch(Transfer::unresolved)) {
      return;
    }
    SimDatabase.Row row = row();
    if (transfer
        && p.transferringTo != null
        && row.term() > p.transferringTerm // max(term + 1, clock in µs): not consecutive
        && Dialect.TRANSFER_PENDING.equals(row.holder())
        && transfers.stream().noneMatch(t -> t.term == row.term())) {
      // the bound lease-core asked for, from the database clock the statement read
      transfers.add(
          new Transfer(row.term(), p.instance(), p.transferringTo, now + p.transferAdoptWithinMs));
      stats.transfers++;
      note(p + " transfer statement: term " + row.term() + " pending for " + p.transferringTo);
      return;
    }
    for (Transfer t : transfers) {
      if (!t.unresolved()) {
        continue;
      }
      if (adopt && row.term() == t.term && !Dialect.TRANSFER_PENDING.equals(row.holder())) {
        // an adopt statement took it (only an adopt swaps the pending holder at the same term):
        // the row's new holder names which process's (its adopt statement's parameter). Not
        // necessarily p's: an adopt whose process crashed before its statement closed is first
        // seen when the next adopt statement closes (issue 38: a campaign found the checker
        // blaming that next process).
        t.adopted = true;
        SimProcess adopter = adopters.get(row.holder());
        String who = adopter != null ? adopter.instance() : "a holder no adopt statement sent";
        if (adopter == null || !adopter.instance().equals(t.successor)) {
          violate(
              "transfer: "
                  + who
                  + " adopted term "
                  + t.term
                  + ", which "
                  + t.from
                  + " transferred to "
                  + t.successor
                  + ": a third process holds the lease between a transfer and its adoption");
        } else {
          stats.transfersAdopted++;
          note(who + " adopted term " + t.term + " from " + t.from);
        }
      } else if (row.term() > t.term) {
        if (now < t.boundMs) {
          violate(
              "transfer: "
                  + p
                  + " took the lease at term "
                  + row.term()
                  + " while term "
                  + t.term
                  + ", which "
                  + t.from
                  + " transferred to "
                  + t.successor
                  + ", was pending for another "
                  + (t.boundMs - now)
                  + " ms"
                  + (p.instance().equals(t.successor)
                      ? ": the successor must adopt the transfer's term"
                      : ": no third process may hold the lease before the adoption bound"));
        }
        t.claimedAfterTheBound = true;
      }
    }
  }

  /** Transfers never adopted whose bound passed: the lease expired and was free again. */
  private void countTransfers() {
    long now = db.nowMs();
    for (Transfer t : transfers) {
      if (!t.adopted && (t.claimedAfterTheBound || now >= t.boundMs)) {
        stats.transfersExpiredUnadopted++;
      }
    }
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

  // ---- business transactions through lease-jdbc -------------------------------------------------

  /**
   * Starts a business transaction under the process's lease; its steps follow on the process's
   * timers, 0–{@code gapMs} ms of its clock apart, and {@code onEnd} runs when it ended.
   */
  void beginTransaction(SimProcess p, boolean failMidway, int[] gapsMs, Runnable onEnd) {
    Lease lease = p.lease();
    BusinessTxn t = new BusinessTxn(p, lease, ++txnSeq, failMidway);
    p.openTxn = t;
    continueTransaction(t, gapsMs, 0, onEnd, 0);
  }

  private void continueTransaction(
      BusinessTxn t, int[] gapsMs, int k, Runnable onEnd, long deferredNanos) {
    SimProcess p = t.process;
    if (t.step == 0
        && p.keeperDepth > 0
        && deferredNanos < 4 * timings.attemptTimeout().toNanos()) {
      // lease-jdbc lets an in-flight renewal go first on SQLite (Lease.awaitRenewal, at most the
      // attempt timeout, in real time): the simulation waits for the renewal's end in virtual time
      // instead (at most the renewal's longest attempt: its request, lock wait and reply)
      p.scheduleWork(
          () -> continueTransaction(t, gapsMs, k, onEnd, deferredNanos + SLICE_NANOS),
          SLICE_NANOS / 1_000_000);
      return;
    }
    if (!step(t)) {
      onEnd.run();
      return;
    }
    p.scheduleWork(
        () -> continueTransaction(t, gapsMs, k + 1, onEnd, 0), gapsMs[k % gapsMs.length]);
  }

  /** A whole business transaction now, step after step (the model's transaction). */
  Outcome transactionNow(SimProcess p) {
    Lease lease = p.lease();
    if (lease == null) {
      return Outcome.SKIPPED;
    }
    BusinessTxn t = new BusinessTxn(p, lease, ++txnSeq, false);
    p.openTxn = t;
    while (step(t)) {
      // next step at once
    }
    return lastOutcome;
  }

  /** Runs the transaction's next step; false when it ended. */
  private boolean step(BusinessTxn t) {
    SimProcess p = t.process;
    long term = t.lease.term();
    try (LeaseContext.Scope scope = LeaseContext.bind(t.lease)) {
      switch (t.step) {
        case 0 -> {
          t.connection = p.fenced.getConnection();
          t.connection.setAutoCommit(false);
          // the first statement, a read: lease-jdbc verifies the lease here
          try (PreparedStatement ps =
              t.connection.prepareStatement(
                  "SELECT count(*) FROM " + SimDatabase.BUSINESS + " WHERE txn = ?")) {
            ps.setLong(1, t.id);
            ps.executeQuery().close();
          }
          note(p + " transaction " + t.id + " verified under term " + term);
        }
        case 1 -> {
          insert(t.connection, t.id, 1, term);
          if (t.failMidway) {
            // the application gives up and closes the connection without rolling back
            throw new SQLException("application error after the first row (simulated)");
          }
        }
        case 2 -> insert(t.connection, t.id, 2, term);
        default -> {
          t.connection.commit();
          committed(t);
          end(t, Outcome.OK, null);
          return false;
        }
      }
      t.step++;
      return true;
    } catch (SQLException e) {
      Outcome o = Outcome.ERROR;
      if (e instanceof LeaseLostSQLException l) {
        if (LeaseLostSQLException.REFUSED.equals(l.getSQLState())) {
          o = Outcome.REFUSED;
          if (e.getMessage().contains("the database says")) {
            stats.refusedByDatabase++;
          } else {
            stats.refusedLocally++;
          }
        } else if (LeaseLostSQLException.POISONED.equals(l.getSQLState())) {
          o = Outcome.POISONED;
          stats.poisonedByLoss++;
        }
      }
      end(t, o, e);
      return false;
    }
  }

  /** Invariant 3 at the moment of the commit: no claim of a later term may have committed. */
  private void committed(BusinessTxn t) throws SQLException {
    SimDatabase.Row row = db.row(NAME);
    if (row.term() > t.lease.term()) {
      violate(
          "invariant 3: transaction "
              + t.id
              + " verified under term "
              + t.lease.term()
              + " committed after the claim of term "
              + row.term()
              + " by "
              + row.instance()
              + " had committed");
    }
    commitsOfTerm.merge(t.lease.term(), 1L, Long::sum);
    stats.committed++;
  }

  private void end(BusinessTxn t, Outcome outcome, SQLException error) {
    SimProcess p = t.process;
    if (t.connection != null) {
      try {
        t.connection.close(); // try-with-resources: no rollback by the application
      } catch (SQLException e) {
        // the connection is gone
      }
    }
    if (p.openTxn == t) {
      p.openTxn = null;
    }
    if (t.pausedWhileOpen) {
      stats.transactionsOpenAcrossAPause++;
    }
    lastOutcome = outcome;
    note(
        p
            + " transaction "
            + t.id
            + " "
            + outcome
            + (error != null ? ": " + firstLine(error.getMessage()) : ""));
    // invariant 4 for this transaction, as the database has it now
    try {
      long rows = db.businessRows(t.id);
      if ((outcome == Outcome.OK && rows != ROWS) || (outcome != Outcome.OK && rows != 0)) {
        violate(
            "invariant 4: transaction "
                + t.id
                + " ended "
                + outcome
                + " with "
                + rows
                + " of its "
                + ROWS
                + " rows in the database");
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String firstLine(String s) {
    return s == null ? "" : s.lines().findFirst().orElse("");
  }

  private static void insert(Connection c, long txn, int part, long term) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO " + SimDatabase.BUSINESS + " (txn, part, term) VALUES (?, ?, ?)")) {
      ps.setLong(1, txn);
      ps.setInt(2, part);
      ps.setLong(3, term);
      ps.executeUpdate();
    }
  }

  // ---- statements in virtual time ---------------------------------------------------------------

  /**
   * Runs one statement of a process's connection: the request may be late (a delay, a stalled
   * database) or time out, it waits for SQLite's locks up to the connection's busy timeout, its
   * reply may be late; during every wait the rest of the world runs, and a cancel from lease-jdbc
   * (after the loss of the lease it runs under) interrupts it.
   */
  /**
   * Which process sent an adopt statement with a new holder: the row names the holder, and the
   * adopter's statement may never close (its process crashed after the database took it).
   */
  private final Map<String, SimProcess> adopters = new HashMap<>();

  Object execute(SimConnection.Stmt s, String sql, Call call) throws Throwable {
    if (s.firstParameter != null && Mutation.isAdopt(sql)) {
      adopters.put(s.firstParameter, s.connection().process);
    }
    SimConnection c = s.connection();
    SimProcess p = c.process;
    Lease bound = LeaseInternals.currentOrNull();
    boolean lostBefore = bound == null || bound.isLost();
    BooleanSupplier cancel = () -> s.isCancelled() || (c.verified && !lostBefore && bound.isLost());
    // lease statements (autocommit on SQLite) give up after the attempt timeout; an application's
    // statement inside its transaction waits as long as the delay lasts
    long timeout =
        c.physical.getAutoCommit() ? timings.attemptTimeout().toNanos() : Long.MAX_VALUE / 4;
    long wait = 0;
    if (p.delayNext > 0) {
      p.delayNext--;
      wait = p.delayNanos;
    }
    wait = Math.max(wait, stallUntil - loop.now);
    if (wait > 0) {
      await(p, Math.min(wait, timeout), cancel);
      interruptIfCancelled(s, c, bound, lostBefore, sql);
      if (wait > timeout) {
        throw new SQLTimeoutException(
            "request timed out after " + timeout / 1_000_000 + " ms (simulated)");
      }
    }
    Object result;
    long busyUntil = loop.now + c.busyTimeoutMs * 1_000_000L;
    boolean counted = false;
    while (true) {
      if (p.crashed || c.broken) {
        throw new SQLNonTransientConnectionException("the process crashed (simulated)", "08003");
      }
      try {
        s.dbNowMs = db.nowMs(); // the database clock the statement reads
        result = call.call();
        break;
      } catch (SQLiteException e) {
        if (e.getResultCode() != SQLiteErrorCode.SQLITE_BUSY || loop.now >= busyUntil) {
          throw e;
        }
        if (!counted && Mutation.isTransfer(sql) && p.hasVerifiedTransaction()) {
          p.transferWaited = true;
          note(p + " transfer waits for its verified transaction's write lock");
        } else if (!counted && Mutation.isClaim(sql) && anotherVerifiedTransaction(p)) {
          stats.claimsThatWaitedForAVerifiedTransaction++;
          p.claimWaited = true;
          for (SimProcess q : processes) {
            if (q != p) {
              for (SimConnection held : q.verifiedConnections()) {
                if (heldBack.add(held.verifiedSerial)) {
                  stats.verifiedTransactionsThatHeldBackAClaim++;
                }
              }
            }
          }
          note(p + " claim waits for a verified transaction's write lock");
        }
        counted = true;
        await(p, Math.min(SLICE_NANOS, busyUntil - loop.now), cancel);
        interruptIfCancelled(s, c, bound, lostBefore, sql);
      }
    }
    if (Mutation.isVerify(sql) && !c.physical.getAutoCommit()) {
      if (!c.verified) {
        c.verifiedSerial = ++verifiedSerials;
      }
      c.verified = true;
    }
    if (p.slowReplyNext > 0) {
      p.slowReplyNext--;
      // the statement took effect; only its answer is late
      await(p, Math.min(p.slowReplyNanos, timeout), () -> false);
    }
    return result;
  }

  /** Numbers the verified transactions; those that held back a claim, by number. */
  private long verifiedSerials;

  private final java.util.Set<Long> heldBack = new java.util.HashSet<>();

  private boolean anotherVerifiedTransaction(SimProcess self) {
    return processes.stream().anyMatch(q -> q != self && q.hasVerifiedTransaction());
  }

  /**
   * lease-jdbc cancels the statement running under a lease when the lease is lost, from another
   * thread: wait for that cancel when the loss happened during this statement's wait, then fail as
   * SQLite's interrupt does (rolling back a write's transaction).
   */
  private void interruptIfCancelled(
      SimConnection.Stmt s, SimConnection c, Lease bound, boolean lostBefore, String sql)
      throws SQLException {
    boolean expected = c.verified && !lostBefore && bound.isLost();
    if (!s.isCancelled() && !expected) {
      return;
    }
    try {
      if (!s.cancelled.await(10, TimeUnit.SECONDS)) {
        violate(
            "lease-jdbc: the loss of term "
                + bound.term()
                + " did not cancel the statement running under it within 10 s");
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    stats.cancelledByLoss++;
    note(c.process + " statement cancelled: " + sql);
    String verb = sql.stripLeading().toUpperCase(java.util.Locale.ROOT);
    if (verb.startsWith("INSERT") || verb.startsWith("UPDATE") || verb.startsWith("DELETE")) {
      try {
        c.physical.rollback();
        c.verified = false;
      } catch (SQLException e) {
        // no transaction
      }
    }
    throw new SQLException("[SQLITE_INTERRUPT] interrupted (the statement was cancelled)");
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
          && commitsOfTerm.getOrDefault(previous, 0L) > 0
          && commitsOfTerm.getOrDefault(term, 0L) > 0) {
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
