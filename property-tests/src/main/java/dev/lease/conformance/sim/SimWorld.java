package dev.lease.conformance.sim;

import dev.lease.core.FailurePolicy;
import dev.lease.core.Lease;
import dev.lease.core.LeaseException;
import dev.lease.core.LeaseManager;
import dev.lease.core.LeaseTimings;
import dev.lease.core.internal.LeaseInternals;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A simulated cluster: processes with their own clocks and faults, one database whose clock is the
 * true time, and the checks of DESIGN.md's invariants 1–4 run after every step. One world is reused
 * for many schedules ({@link #start}); it runs on one thread.
 */
public final class SimWorld implements AutoCloseable {

  public static final String NAME = "job";
  private static final int TRACE = 40;

  /** What a protocol call returned. */
  enum Outcome {
    OK,
    REFUSED,
    ERROR,
    SKIPPED
  }

  final EventLoop loop = new EventLoop();
  final SimDatabase db;
  final SimOptions options;
  final LeaseTimings timings;
  final List<SimProcess> processes = new ArrayList<>();
  long stallUntil;

  private final Map<Long, String> holderOfTerm = new HashMap<>();
  private final Deque<String> trace = new ArrayDeque<>();
  private long maxClaimedTerm;
  private long lastRowTerm;
  private long txnSeq;
  long commits;
  long faults;
  private String violation;

  public SimWorld(SimOptions options) {
    this.options = options;
    this.timings = options.timings;
    try {
      this.db = new SimDatabase(loop);
    } catch (SQLException e) {
      throw new IllegalStateException(
          "cannot open the in-memory SQLite database of the simulation", e);
    }
  }

  /** Starts a new schedule with one process per entry of {@code rates} (clock rates). */
  void start(List<Double> rates) {
    loop.clear();
    processes.clear();
    holderOfTerm.clear();
    trace.clear();
    maxClaimedTerm = 0;
    lastRowTerm = 0;
    txnSeq = 0;
    commits = 0;
    faults = 0;
    stallUntil = 0;
    violation = null;
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
      LeaseInternals.clock(builder, clock);
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
    return List.copyOf(trace);
  }

  void note(String what) {
    if (trace.size() == TRACE) {
      trace.removeFirst();
    }
    trace.addLast(String.format("%7.1f ms  %s", loop.now / 1e6, what));
  }

  private void violate(String what) {
    if (violation == null) {
      violation = what;
      note("VIOLATION " + what);
    }
  }

  // ---- the protocol, as a process calls it ------------------------------------------------------

  Outcome claim(SimProcess p) {
    try {
      Optional<Lease> claimed = p.manager.tryClaim(NAME);
      if (claimed.isEmpty()) {
        note(p + " claim: held by another");
        return Outcome.REFUSED;
      }
      Lease lease = claimed.get();
      p.leases.add(lease);
      note(p + " claimed term " + lease.term());
      String previous = holderOfTerm.putIfAbsent(lease.term(), lease.holder());
      if (previous != null) {
        violate(
            "invariant 1: term "
                + lease.term()
                + " was claimed twice, by "
                + previous
                + " and by "
                + p
                + " ("
                + lease.holder()
                + ")");
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
    } catch (LeaseException e) {
      note(p + " claim failed: " + e.getMessage());
      return Outcome.ERROR;
    }
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

  /**
   * A business transaction of two rows under the process's lease: the strict verify first, then the
   * rows, then the commit. With {@code failMidway} the connection breaks after the first row.
   */
  Outcome transaction(SimProcess p, boolean failMidway) {
    Lease lease = p.lease();
    if (lease == null) {
      return Outcome.SKIPPED;
    }
    long txn = ++txnSeq;
    Outcome outcome;
    try (Connection c = p.dataSource.getConnection()) {
      c.setAutoCommit(false);
      if (!LeaseInternals.verifyInTransaction(lease, c, true, Duration.ofMillis(100))) {
        c.rollback();
        note(p + " transaction " + txn + " refused: term " + lease.term() + " not verified");
        outcome = Outcome.REFUSED;
      } else {
        insert(c, txn, 1, lease.term());
        if (failMidway) {
          throw new SQLException("connection broken after the first row (simulated)");
        }
        insert(c, txn, 2, lease.term());
        SimDatabase.Row row = db.row(NAME);
        if (row.term() != lease.term() || !row.holder().equals(lease.holder())) {
          violate(
              "invariant 3: transaction "
                  + txn
                  + " verified under term "
                  + lease.term()
                  + " is committing while the database names term "
                  + row.term());
        }
        c.commit();
        commits++;
        note(p + " transaction " + txn + " committed under term " + lease.term());
        outcome = Outcome.OK;
      }
    } catch (SQLException e) {
      note(p + " transaction " + txn + " failed: " + e.getMessage());
      outcome = Outcome.ERROR;
    }
    try {
      long rows = db.businessRows(txn);
      if ((outcome == Outcome.OK && rows != 2) || (outcome != Outcome.OK && rows != 0)) {
        violate(
            "invariant 4: transaction "
                + txn
                + " ended "
                + outcome
                + " with "
                + rows
                + " of its 2 rows applied");
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return outcome;
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

  /** A broken participant writes to the lease table (negative controls only). */
  void intrude() {
    if (options.intruder == null) {
      return;
    }
    try {
      options.intruder.act(db.raw(), SimDatabase.TABLE, NAME, timings.leaseDuration().toMillis());
      note("intruder wrote to the lease table");
    } catch (SQLException e) {
      note("intruder failed: " + e.getMessage());
    }
  }

  // ---- the invariants
  // ----------------------------------------------------------------------------

  /**
   * Invariants 1 and 2 against the database as it is now: terms never go back, and every lease
   * whose holder's local deadline has not passed is the database's current, unexpired holder.
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

  /** Invariant 4 over the whole business table. */
  void checkBusinessTable() {
    if (violation != null) {
      return;
    }
    try {
      String half = db.halfApplied();
      if (half != null) {
        violate("invariant 4: " + half);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
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
    try {
      db.close();
    } catch (SQLException e) {
      // in-memory database: nothing left behind
    }
  }
}
