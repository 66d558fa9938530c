package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.FencingOptions;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.internal.FenceRules;
import dev.lease.jdbc.internal.fence.SessionView.Mode;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.Executor;

/**
 * What the fence's rules share with the parts they are split into ({@link SqlControl}, {@link
 * AutoCommitStatements}, {@link Bypass}, {@link AbandonedTransactions}): the connection's fencing
 * state and the collaborators that talk to the database, the checks every commit gets, the running
 * of a statement, and the two steps of the rules the parts call back ({@link #ordinary}, {@link
 * #verifyIfNeeded}). {@link TransactionFence} is its one subclass and holds the rules; the parts
 * get this, not the fence, so no import in the fence's package points back up (docs/code.md, "The
 * fence's layers").
 */
abstract class FenceSteps {

  /** What the collaborators below share ({@link FenceContext}). */
  final FenceContext ctx;

  // the context's parts, named here for the rules (documented there)
  final Connection delegate;
  final FencingOptions options;
  final FenceRules rules;
  final Executor cancelExecutor;
  final VerifyStrategy strategy;
  final TransactionState state;

  /** What may end a refused transaction, and the XA branch begun as SQL (issue 25 item 8). */
  final Abandoning abandoning = new Abandoning();

  final Losses losses;
  final Verifier verifier;
  final Piggyback piggyback;
  final SessionView view;
  final StatementReader reader;

  FenceSteps(Connection delegate, FenceConfig config) {
    this.ctx = new FenceContext(delegate, config);
    this.delegate = delegate;
    this.options = ctx.options;
    this.rules = ctx.rules;
    this.cancelExecutor = ctx.cancelExecutor;
    this.strategy = ctx.strategy;
    this.state = ctx.state;
    this.losses = new Losses(ctx);
    this.view = new SessionView(ctx);
    this.reader = new StatementReader(ctx, view);
    this.verifier = new Verifier(ctx, losses, view, reader);
    this.piggyback = new Piggyback(ctx, verifier, losses, view, reader);
    if (SessionBounds.used() && rules.restoresSessionBounds()) {
      state.flags = TransactionState.SESSION_CHECK;
    }
  }

  /**
   * An ordinary statement: runs in a verified transaction (the rules, {@link TransactionFence}).
   */
  abstract <T> T ordinary(Lease lease, StatementHandle st, SqlCall<T> call) throws SQLException;

  /** The transaction's verify under {@code lease} if it has not run, or again if in doubt. */
  abstract void verifyIfNeeded(Lease lease, Mode mode) throws SQLException;

  boolean isMySql() {
    return ctx.isMySql();
  }

  /**
   * MySQL/MariaDB: after a batch or a multi-statement text, or once a driver object that can run
   * SQL was handed out, the driver's in-transaction flag (read after the whole call) no longer
   * proves that the verified transaction is still the open one: an implicit commit the lexer does
   * not know (MariaDB's CREATE TEMPORARY SEQUENCE was one) or a commit through the driver object
   * ends it and frees STRICT's lock, and a later statement opens a new one, so the flag says "in
   * transaction" again. The next statement and the commit verify again.
   */
  void inDoubt(Doubt why) {
    state.doubt(why);
  }

  // ---- the checks of a commit

  /**
   * Everything a commit needs, whatever writes it (commit(), setAutoCommit(true), COMMIT or END as
   * SQL, MySQL's implicit commits, SET autocommit = 1, SQLite's RELEASE): not poisoned, the lock
   * taken again if an error or a savepoint rollback may have freed it, and {@link #checkStillHeld}.
   */
  void checkCommit(Lease lease) throws SQLException {
    checkNotPoisoned();
    if (!rules.checksCommitsWrittenAsSql()) {
      return;
    }
    if (verifier.endedBehindTheFence()) {
      state.doubt(Doubt.DRIVER_STATE_DISAGREES);
    }
    if (state.reverify && state.verified() != null && lease == state.verified()) {
      verifier.verifyAgain(lease);
    }
    checkStillHeld();
  }

  /**
   * The lease the transaction was verified under is not lost ({@link Losses#refuseIfLost}), and
   * what the mode adds: {@link VerifyStrategy#STRICT} nothing (the verify's share lock on the lease
   * row, held to this commit, makes a successor's claim wait for it); {@link VerifyStrategy#VERIFY}
   * refuses the commit once the lease was released (nothing in the database orders it before a
   * successor's claim).
   */
  void checkStillHeld() throws LeaseLostSQLException {
    Lease lease = state.verified();
    if (lease != null) {
      losses.refuseIfLost(lease);
      String refusal = strategy.refusesCommit(lease);
      if (refusal != null) {
        throw losses.refuse(lease, refusal);
      }
    }
  }

  void checkNotPoisoned() throws LeaseLostSQLException {
    if (state.poisoned()) {
      throw losses.poisonedException(null);
    }
  }

  // ---- running statements

  /** A statement in the verified transaction: cancelled if its lease is lost while it runs. */
  <T> T run(StatementHandle st, SqlCall<T> call) throws SQLException {
    FencedTransaction t = state.txn;
    if (t != null) {
      t.running = st == null ? null : st.driverStatement();
    }
    try {
      return call.call();
    } catch (SQLException e) {
      view.afterError();
      throw losses.ofFailedStatement(t, e);
    } finally {
      if (t != null) {
        t.running = null;
      }
    }
  }

  /** Transaction control and statements that need no verify: only the bookkeeping of errors. */
  <T> T runUnverified(SqlCall<T> call) throws SQLException {
    try {
      return call.call();
    } catch (SQLException e) {
      view.afterError();
      throw e;
    }
  }
}
