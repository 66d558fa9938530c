package dev.lease.conformance.sim;

import dev.lease.conformance.sim.SimWorld.Outcome;
import dev.lease.core.Lease;
import dev.lease.core.LeaseContext;
import dev.lease.jdbc.LeaseLostSQLException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.TreeMap;

/**
 * The business transactions of a schedule, through lease-jdbc: each of {@link SimWorld#ROWS} rows
 * under a process's lease, run in steps on the process's timers, and the invariants checked as each
 * ends (invariant 3 at its commit: no claim of a later term committed before it; invariant 4: all
 * of its rows or none).
 */
final class SimTransactions {

  /** A business transaction of {@link SimWorld#ROWS} rows under a process's lease, run in steps. */
  static final class BusinessTxn {
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

  private final SimWorld w;
  private final Map<Long, Long> commitsOfTerm = new TreeMap<>();
  private long txnSeq;

  /** How the last business transaction ended (the model's synchronous transaction reads it). */
  private Outcome lastOutcome;

  SimTransactions(SimWorld w) {
    this.w = w;
  }

  /** A new schedule. */
  void clear() {
    commitsOfTerm.clear();
    txnSeq = 0;
    lastOutcome = null;
  }

  /** Transactions verified under {@code term} that committed. */
  long commitsOfTerm(long term) {
    return commitsOfTerm.getOrDefault(term, 0L);
  }

  /**
   * Starts a business transaction under the process's lease; its steps follow on the process's
   * timers, 0–{@code gapMs} ms of its clock apart, and {@code onEnd} runs when it ended.
   */
  void begin(SimProcess p, boolean failMidway, int[] gapsMs, Runnable onEnd) {
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
        && deferredNanos < 4 * w.timings.attemptTimeout().toNanos()) {
      // lease-jdbc lets an in-flight renewal go first on SQLite (Lease.awaitRenewal, at most the
      // attempt timeout, in real time): the simulation waits for the renewal's end in virtual time
      // instead (at most the renewal's longest attempt: its request, lock wait and reply)
      p.scheduleWork(
          () -> continueTransaction(t, gapsMs, k, onEnd, deferredNanos + SimWorld.SLICE_NANOS),
          SimWorld.SLICE_NANOS / 1_000_000);
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
  Outcome now(SimProcess p) {
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
          w.note(p + " transaction " + t.id + " verified under term " + term);
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
            w.stats.refusedByDatabase++;
          } else {
            w.stats.refusedLocally++;
          }
        } else if (LeaseLostSQLException.POISONED.equals(l.getSQLState())) {
          o = Outcome.POISONED;
          w.stats.poisonedByLoss++;
        }
      }
      end(t, o, e);
      return false;
    }
  }

  /** Invariant 3 at the moment of the commit: no claim of a later term may have committed. */
  private void committed(BusinessTxn t) throws SQLException {
    SimDatabase.Row row = w.db.row(SimWorld.NAME);
    if (row.term() > t.lease.term()) {
      w.violate(
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
    w.stats.committed++;
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
      w.stats.transactionsOpenAcrossAPause++;
    }
    lastOutcome = outcome;
    w.note(
        p
            + " transaction "
            + t.id
            + " "
            + outcome
            + (error != null ? ": " + firstLine(error.getMessage()) : ""));
    // invariant 4 for this transaction, as the database has it now
    try {
      long rows = w.db.businessRows(t.id);
      if ((outcome == Outcome.OK && rows != SimWorld.ROWS)
          || (outcome != Outcome.OK && rows != 0)) {
        w.violate(
            "invariant 4: transaction "
                + t.id
                + " ended "
                + outcome
                + " with "
                + rows
                + " of its "
                + SimWorld.ROWS
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
}
