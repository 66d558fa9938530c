package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.internal.fence.SessionView.Mode;
import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.Connection;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fencing state of one connection wrapper and the rules that move it. The rules in one place:
 *
 * <ul>
 *   <li><b>No lease bound</b>: every call passes through. Nothing is lexed, nothing is asked; a few
 *       field reads decide it ({@link #idle}).
 *   <li><b>Under a lease, every statement's text is read</b> ({@link SqlLexer}, per dialect, every
 *       reading of the text): a text or batch holding transaction control together with anything
 *       else is refused ({@value LeaseLostSQLException#TRANSACTION_CONTROL_MIXED}) before any of it
 *       is sent; a lone control statement runs by its own rule ({@link SqlControl}).
 *   <li><b>The verify</b> runs lazily at the first ordinary statement of a transaction (and before
 *       {@code setSavepoint} and vendor {@code unwrap}), never at {@code setAutoCommit(false)}
 *       (checklist 7, 17); exactly once per transaction, under one lease (checklist 24); again
 *       after anything that may have taken its lock away: a driver error, a savepoint rollback, a
 *       MySQL CALL ({@link TransactionState#reverify}).
 *   <li><b>The database refuses</b>: a verify whose lease is gone fails in the server, so nothing
 *       sent with it or after it runs; {@link Losses#refusedByDatabase} turns its error into LF001.
 *       <b>Every commit carries its proof</b> ({@link #commit}): on PostgreSQL the verify rides in
 *       the COMMIT's round trip; elsewhere it runs before the COMMIT when the fence's picture is in
 *       doubt, including when the driver says the verified transaction ended behind the fence
 *       ({@link Verifier#endedBehindTheFence}). The mechanism is in {@code FenceRules};
 *       DESIGN-NOTE.md.
 *   <li><b>Where the transaction is</b> is asked of the driver, not assumed ({@link SessionView}):
 *       a BEGIN sent as SQL before the lease was bound, {@code SET autocommit} as SQL, a deadlock
 *       that rolled the transaction back. With a driver that cannot tell, the fence assumes only
 *       what is safe: no transaction is open unless it saw one begin.
 *   <li><b>Autocommit statements</b> run as their own verified transaction ({@link
 *       AutoCommitPolicy}, {@link AutoCommitStatements}); a query's transaction stays open while
 *       its result set streams (MySQL) or is read without a server-side cursor (pgjdbc), as it
 *       would in autocommit mode.
 *   <li><b>Refusal poisons</b> the transaction: every statement and commit fail until a rollback;
 *       rollback and close never fail because of a lease (checklist 19, 20). <b>Loss</b> poisons
 *       the transaction verified under the lost lease and cancels its running statement, and only
 *       that transaction: each transaction has a generation, and a loss reported as it ends does
 *       not reach the next one.
 * </ul>
 *
 * This class holds the rules; the transaction's state is a {@link TransactionState}, and the
 * mechanisms are its collaborators, each a package-private class that reads and moves that state:
 * {@link Verifier} (the verify and the commit's proof, with {@link VerifyStrategy#STRICT} and
 * {@link VerifyStrategy#VERIFY} as its strategies), {@link Piggyback} (the verify in the first
 * statement's round trip), {@link AutoCommitStatements}, {@link SessionView} (where the transaction
 * is), {@link StatementReader} (reading the text), {@link SqlControl} (transaction control written
 * as SQL), {@link Bypass} (savepoints and unwrap), {@link AbandonedTransactions} and {@link Losses}
 * (loss, refusal, poison and the fence's exceptions). They log under this class's name. What the
 * parts of the rules share with this class (the state and collaborators, the checks every commit
 * gets, the running of a statement) is its superclass {@link FenceSteps}: the parts get that, not
 * the fence.
 *
 * <p>Connections are used by one thread at a time; only the loss listener touches the state from
 * another thread, through its volatile fields and under its monitor.
 */
final class TransactionFence extends FenceSteps {

  private static final Logger log = LoggerFactory.getLogger(TransactionFence.class);

  final AutoCommitStatements autoCommits = new AutoCommitStatements(this);
  final SqlControl sqlControl = new SqlControl(this, autoCommits);
  final AbandonedTransactions abandonment = new AbandonedTransactions(this, autoCommits);
  final Bypass bypass = new Bypass(this, autoCommits, abandonment);

  TransactionFence(Connection delegate, FenceConfig config) {
    super(delegate, config);
    if (config.weakened()) {
      log.error("{} is fenced by a DELIBERATELY WEAKENED fence {} (tests only)", delegate, rules);
    }
  }

  /** First statements that carried the verify along and ran (tests count them). */
  int piggybacked() {
    return piggyback.piggybacked;
  }

  /** {@link Piggyback#mayPiggyback}. */
  boolean mayPiggyback() {
    return piggyback.mayPiggyback();
  }

  /** A result set of {@code st} (or the statement itself) closed: its query is done. */
  void resultDone(StatementHandle st) throws SQLException {
    autoCommits.resultDone(st);
  }

  /**
   * The pass-through test of the hot path: true when a statement needs no fencing work at all. No
   * allocation: a thread-local read and a field read.
   */
  boolean idle() {
    return state.flags == 0 && losses.cancelling == null && LeaseInternals.currentOrNull() == null;
  }

  /** A statement that passed through failed: the driver's view of the session may be stale. */
  SQLException failed(SQLException e) {
    return view.failed(e);
  }

  /** How the fence reads what a call sends ({@link StatementReader}): by the call's source. */
  private SqlSummary summary(
      StatementHandle st, StatementSource source, String sql, SqlLexer lexer) {
    SqlSummary s;
    switch (source) {
      case TEXT:
        s = lexer.summarize(sql);
        break;
      case ROW_CHANGE:
        return SqlSummary.one(SqlKind.OTHER);
      default:
        s = st.summary(source, lexer);
    }
    return rules.read(s, StatementHandle.text(st, source, sql), lexer);
  }

  // ---- execute: statements under the fencing rules
  // ---------------------------------------------------------------------------------

  /**
   * Runs a statement (or an updatable result set's row change) under the fencing rules.
   *
   * @param st the fenced statement, or null for a row change of a result set without one
   * @param sql the text of {@code execute(String)} and friends; null otherwise
   */
  <T> T execute(StatementHandle st, StatementSource source, String sql, SqlCall<T> call)
      throws SQLException {
    return execute(st, source, sql, call, CallShape.NONE);
  }

  /**
   * Like {@link #execute(FencingStatement, StatementSource, String, SqlCall)}, for a call whose
   * result the fence can present itself when the statement carried the verify along ({@code
   * shape}).
   */
  <T> T execute(
      StatementHandle st, StatementSource source, String sql, SqlCall<T> call, CallShape shape)
      throws SQLException {
    try {
      return rules(st, source, sql, call, shape);
    } finally {
      if ((state.flags & TransactionState.RETIRE) != 0) {
        view.retireIfDue();
      }
    }
  }

  /** {@link #execute}: the rules of a statement under a lease, read top to bottom. */
  private <T> T rules(
      StatementHandle st, StatementSource source, String sql, SqlCall<T> call, CallShape shape)
      throws SQLException {
    if (losses.cancelling != null) {
      losses.awaitCancel();
    }
    autoCommits.finishPending();
    Lease lease = LeaseInternals.currentOrNull();
    if (lease == null) {
      return unleased(st, source, sql, call);
    }
    SqlSummary summary = summary(st, source, sql, reader.lexer(lease));
    int count = summary.count();
    SqlKind kind = count == 1 ? summary.single() : SqlKind.OTHER;
    String text = StatementHandle.text(st, source, sql);
    FencedTransaction open = state.txn;
    Lease owner = open == null ? null : open.lease;
    if (owner != null && lease != owner && abandonment.abandoned()) {
      abandonment.rollbackAbandoned(lease);
    }
    if (state.poisoned()) {
      if (count == 1 && kind.isRollback()) {
        return sqlControl.run(lease, st, kind, summary, call, text);
      }
      int abandon = abandonment.abandons(summary, text);
      if (abandon != Abandoning.NONE) {
        return abandonment.abandon(abandon, call, text);
      }
      throw losses.poisonedException(null);
    }
    if (state.verified() != null && lease != state.verified()) {
      throw losses.leaseChanged(lease);
    }
    if (summary.ambiguous()
        || (summary.hasControl() && (count > 1 || source == StatementSource.BATCH))) {
      throw losses.mixed(lease, summary, source);
    }
    if (count == 0) {
      return call.call(); // nothing but comments: nothing to fence
    }
    if (kind == SqlKind.OTHER) {
      if (isMySql() && (count > 1 || source == StatementSource.BATCH)) {
        try {
          return ordinary(lease, st, call, CallShape.NONE, source, sql);
        } finally {
          inDoubt(Doubt.UNREAD_TEXT);
        }
      }
      return ordinary(lease, st, call, count == 1 ? shape : CallShape.NONE, source, sql);
    }
    sqlControl.refuseBeforeSending(lease, kind, text);
    return sqlControl.run(lease, st, kind, summary, call, text);
  }

  /**
   * True when the session has no transaction open that a refusal could poison: autocommit on, no
   * transaction begun as SQL (as the fence saw it, or as the driver reports it). Local: no round
   * trip.
   */
  boolean noTransactionOpen() throws SQLException {
    return delegate.getAutoCommit()
        && !state.sqlTransaction
        && !Boolean.TRUE.equals(view.driverSession().inTransaction());
  }

  /** No lease bound: pass through, after cleaning up what a lease-bound user left. */
  <T> T unleased(StatementHandle st, StatementSource source, String sql, SqlCall<T> call)
      throws SQLException {
    if ((state.flags & TransactionState.SESSION_CHECK) != 0) {
      state.flags &= ~TransactionState.SESSION_CHECK;
      SessionBounds.restore(delegate);
    }
    if (state.verified() != null || state.poisoned()) {
      if (abandonment.abandoned()) {
        abandonment.rollbackAbandoned(null);
      } else {
        SqlSummary summary = summary(st, source, sql, reader.lexer(null));
        SqlKind kind = summary.count() == 1 ? summary.single() : SqlKind.OTHER;
        String text = StatementHandle.text(st, source, sql);
        int abandon = abandonment.abandons(summary, text);
        if (abandon != Abandoning.NONE) {
          return abandonment.abandon(abandon, call, text);
        }
        if (kind.isRollback()) {
          try {
            return call.call();
          } finally {
            if (kind == SqlKind.ROLLBACK) {
              state.endTransaction();
            } else if (kind == SqlKind.ROLLBACK_TO) {
              rolledBackToSavepoint(); // the verify's lock may be gone (review S3)
            }
          }
        }
        if (state.poisoned() && !rules.poisonEndsWithItsTransaction()) {
          throw losses.poisonedException(null);
        } else if (state.poisoned()) {
          // the poisoned transaction is not this statement's: nothing of it may commit, and a
          // borrower with no lease bound must not inherit it (issue 35 item 5)
          abandonment.rollbackPoisoned();
        } else {
          throw losses.leaseChanged(null);
        }
      }
    }
    state.sqlTransaction = false; // what the text did is not read without a lease: assume nothing
    state.flags &= ~TransactionState.SQL_TRANSACTION;
    try {
      return call.call();
    } catch (SQLException e) {
      throw failed(e);
    }
  }

  /** An ordinary statement: runs in a verified transaction. */
  @Override
  <T> T ordinary(Lease lease, StatementHandle st, SqlCall<T> call) throws SQLException {
    return ordinary(lease, st, call, CallShape.NONE, StatementSource.TEXT, null);
  }

  /**
   * An ordinary statement: runs in a verified transaction; the first of a transaction begun with
   * {@code setAutoCommit(false)} carries the verify along where it can ({@link Piggyback}).
   */
  <T> T ordinary(
      Lease lease,
      StatementHandle st,
      SqlCall<T> call,
      CallShape shape,
      StatementSource source,
      String sql)
      throws SQLException {
    if (state.verified() == lease) {
      if (!state.reverify && verifier.endedBehindTheFence()) {
        // an implicit commit, a COMMIT through a driver object: verify anew
        state.doubt(Doubt.DRIVER_STATE_DISAGREES);
      }
      if (state.reverify) {
        // MySQL family: a CALL/EXECUTE may have run SET autocommit = 1 behind Connector/J's cached
        // flag (review S7): the mode is asked of the server before the cached flag is trusted
        if ((isMySql() || delegate.getAutoCommit()) && view.mode() == Mode.AUTOCOMMIT) {
          // the error ended the transaction begun as SQL (a deadlock, SQLite's ON CONFLICT
          // ROLLBACK): the statement is an autocommit statement now
          state.endTransaction();
          return autoCommits.autoCommitStatement(lease, st, SqlKind.OTHER, call);
        }
        verifier.verifyAgain(lease);
      }
      return run(st, call);
    }
    if (lease.isLost()) {
      // known lost (the database refused it, or its deadline passed): refused here, before any
      // round trip — not even the MySQL flag refresh that mode() may send after the refusal's error
      try {
        verifier.verify(lease);
      } finally {
        if (rules.poisonEndsWithItsTransaction() && noTransactionOpen()) {
          // an autocommit statement is a transaction of its own: its refusal ends with it and
          // poisons nothing after it (issue 35 item 5)
          state.endTransaction();
        }
      }
    }
    switch (view.mode()) {
      case JDBC:
        if (shape != CallShape.NONE && piggyback.piggybackable(lease, st, source, sql, shape)) {
          return piggyback.piggyback(lease, st, source, sql, shape);
        }
        view.ensureSqliteTransaction();
        verifier.verify(lease);
        return run(st, call);
      case SQL:
        verifier.verify(lease);
        if (Boolean.FALSE.equals(view.driverSession().inTransaction())) {
          // the driver's flags were stale: the verify ran in autocommit, no transaction is open
          state.endTransaction();
          state.markSqlTransaction(false);
          return autoCommits.autoCommitStatement(lease, st, SqlKind.OTHER, call);
        }
        return run(st, call);
      default:
        return autoCommits.autoCommitStatement(lease, st, SqlKind.OTHER, call);
    }
  }

  /**
   * Before {@code setSavepoint} and vendor {@code unwrap} ({@link Bypass#verifyIfInTransaction}).
   */
  void verifyIfInTransaction() throws SQLException {
    bypass.verifyIfInTransaction();
  }

  /** Before one vendor call whose result is data ({@link Bypass#beforeDataCall}). */
  void beforeDataCall() throws SQLException {
    bypass.beforeDataCall();
  }

  /** Before {@code unwrap} hands out a driver object ({@link Bypass#beforeUnwrap}). */
  void beforeUnwrap(Class<?> iface) throws SQLException {
    bypass.beforeUnwrap(iface);
  }

  @Override
  void verifyIfNeeded(Lease lease, Mode mode) throws SQLException {
    if (state.verified() == lease) {
      if (state.reverify) {
        verifier.verifyAgain(lease);
      }
      return;
    }
    if (mode == Mode.JDBC) {
      view.ensureSqliteTransaction();
    }
    verifier.verify(lease);
  }

  // ---- commit, rollback, setAutoCommit and the connection's other calls
  // ---------------------------------------------------------------------------

  /**
   * {@code commit()}: every commit carries its proof. The transaction must not be poisoned; one a
   * pool left open for this thread is rolled back, not committed. Then the checks every commit gets
   * ({@link #checkStillHeld}: the lease not lost, and what the mode adds: under {@link
   * VerifyStrategy#STRICT} nothing, the verify's share lock on the lease row orders this commit
   * before a successor's claim; under {@link VerifyStrategy#VERIFY} a release since the verify
   * refuses it). On PostgreSQL the proof rides in the COMMIT's own round trip ({@link
   * Verifier#commitWithVerify}); elsewhere the verify runs again first when its lock may be gone,
   * and writes the fence never verified (a driver object) are verified before they commit.
   */
  void commit() throws SQLException {
    autoCommits.finishPending();
    checkNotPoisoned();
    Lease lease = LeaseInternals.currentOrNull();
    if (state.verified() != null && lease != state.verified() && abandonment.abandoned()) {
      abandonment.rollbackAbandoned(lease);
    }
    Lease proof = verifier.proofLease(lease);
    if (proof != null && proof == state.verified() && verifier.endedBehindTheFence()) {
      state.doubt(Doubt.DRIVER_STATE_DISAGREES);
    }
    boolean rides = verifier.ridesInCommit(proof);
    if (state.reverify && state.verified() != null && !rides) {
      verifier.verifyAgain(state.verified());
    }
    checkStillHeld();
    try {
      if (rides) {
        verifier.commitWithVerify(proof);
      } else {
        if (proof != null && proof != state.verified() && rules.commitCarriesProof()) {
          verifier.verify(proof); // writes the fence did not see (a driver object): prove them now
        }
        delegate.commit();
      }
    } catch (SQLException e) {
      throw losses.ofFailedCommit(e);
    } finally {
      state.endTransaction();
    }
  }

  /** Never fails because of a lease. */
  void rollback() throws SQLException {
    if (view.retired) {
      state.endTransaction(); // its transaction ended before the connection was retired
      return;
    }
    // an autocommit statement completes; the driver then refuses rollback()
    autoCommits.finishPending();
    boolean lost = losses.rollbackOfLoss();
    try {
      if (abandoning.xaOpen()) {
        abandoning.abandonXa(delegate); // MariaDB refuses ROLLBACK in an XA branch (XAE07)
        if (delegate.getAutoCommit()) {
          return;
        }
      }
      delegate.rollback();
    } catch (SQLException e) {
      // the server ended the session (its idle-in-transaction bound, while this process stood
      // still): its transaction is gone with it, nothing to roll back. Failing here would replace
      // the lease-lost error the caller already has (Spring: "Application exception overridden by
      // rollback exception") with "connection is closed".
      if (!lost || !losses.closedQuietly()) {
        throw e;
      }
      log.debug("no rollback needed: the session of a lost lease's transaction is gone", e);
    } finally {
      state.endTransaction();
    }
  }

  /** A savepoint rollback stays in the transaction, but the verify's lock may be gone. */
  void rolledBackToSavepoint() {
    state.doubt(Doubt.SAVEPOINT_ROLLBACK);
  }

  /**
   * {@code setAutoCommit(true)} with a transaction open commits it (JDBC spec): the same checks as
   * {@link #commit}, and a poisoned one is rolled back instead and the caller told; a redundant
   * call changes nothing (checklist 8, 9).
   */
  void setAutoCommit(boolean autoCommit) throws SQLException {
    autoCommits.finishPending();
    boolean was = delegate.getAutoCommit();
    if (autoCommit == was) {
      delegate.setAutoCommit(autoCommit);
      return;
    }
    if (autoCommit
        && state.poisoned()
        && rules.poisonEndsWithItsTransaction()
        && LeaseInternals.currentOrNull() != state.txn.lease) {
      // not the poisoned transaction's lease: a pool's reset or another borrower, not its owner;
      // rolled back, as it must be, without failing a caller it does not belong to (issue 35)
      abandonment.rollbackPoisoned();
      delegate.setAutoCommit(true);
      return;
    }
    if (autoCommit && state.poisoned()) {
      LeaseLostSQLException refused =
          losses.poisonedException(
              "setAutoCommit(true) would commit it; it was rolled back instead");
      try {
        delegate.rollback();
      } catch (SQLException e) {
        refused.addSuppressed(e);
      }
      state.endTransaction();
      delegate.setAutoCommit(true);
      throw refused;
    }
    if (autoCommit) {
      Lease proof = verifier.proofLease(LeaseInternals.currentOrNull());
      if (proof != null && verifier.ridesInCommit(proof)) {
        checkStillHeld();
        verifier.commitWithVerify(proof); // the driver then finds nothing open to commit
      } else if (proof != null && proof == state.verified()) {
        checkCommit(proof);
      } else if (proof != null) {
        verifier.verify(proof); // writes the fence did not see: prove them before they commit
      }
    }
    try {
      delegate.setAutoCommit(autoCommit);
    } finally {
      if (!state.poisoned()) { // poison stays until rollback, even across setAutoCommit(false)
        state.endTransaction();
        state.markSqlTransaction(false);
      }
    }
  }

  /** What {@code getAutoCommit()} reports: autocommit while an autocommit query is pending. */
  boolean getAutoCommit() throws SQLException {
    return autoCommits.pending != null || delegate.getAutoCommit();
  }

  /** Before {@code setTransactionIsolation}, {@code setReadOnly} and the like. */
  void beforeSessionChange() throws SQLException {
    autoCommits.finishPending();
  }

  /**
   * The connection is closed or handed back: a verified or poisoned transaction still open is
   * rolled back, not left to the pool ({@link AbandonedTransactions#closing}). Never fails.
   */
  void closing() {
    abandonment.closing();
  }

  /** The transaction ended outside the connection (an XA branch, through its XAResource). */
  void endedElsewhere() {
    state.markSqlTransaction(false);
    state.endTransaction();
  }

  /** The connection was aborted: forget the transaction (the driver ends it). */
  void closed() {
    autoCommits.pending = null;
    state.flags &= ~TransactionState.PENDING;
    state.endTransaction();
  }

  /** A pool's request boundary ({@link AbandonedTransactions#endRequest}). Never fails. */
  void endRequest() {
    abandonment.endRequest();
  }

  /**
   * Before {@code releaseSavepoint}: a poisoned transaction is refused (SQLite commits when the
   * outermost savepoint is released; review S8).
   */
  void beforeReleaseSavepoint() throws SQLException {
    if (rules.checksCommitsWrittenAsSql()) {
      checkNotPoisoned();
    }
  }
}
