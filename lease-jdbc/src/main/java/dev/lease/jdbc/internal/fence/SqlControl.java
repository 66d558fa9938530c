package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.AutoCommitPolicy;
import dev.lease.jdbc.OutsideTransactionPolicy;
import dev.lease.jdbc.internal.fence.SessionView.Mode;
import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.SQLException;

/**
 * Transaction control written as SQL under a lease (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE,
 * SET autocommit, PREPARE TRANSACTION, XA, MySQL's implicit commits, routines), one statement per
 * text ({@link TransactionFence#execute} refuses control mixed with anything else). Whatever
 * commits passes the checks of {@code commit()} first ({@link TransactionFence#checkCommit}); what
 * ends the transaction ends the fenced one. Part of {@link TransactionFence}.
 */
final class SqlControl {

  private final FenceSteps f;
  private final AutoCommitStatements autoCommits;

  SqlControl(FenceSteps f, AutoCommitStatements autoCommits) {
    this.f = f;
    this.autoCommits = autoCommits;
  }

  /**
   * Refused before anything is sent (MySQL/MariaDB): XA PREPARE when the verify holds a lock
   * ({@link VerifyStrategy#refusesXaPrepare}), a LOCK TABLES whose list leaves out the lease table.
   */
  void refuseBeforeSending(Lease lease, SqlKind kind, String text) throws SQLException {
    if (kind == SqlKind.DELAYED_WRITE && f.rules.refusesEffectsOutsideTheLock()) {
      throw Losses.outsideTransactionRefused(
          lease,
          "INSERT or REPLACE DELAYED: the server writes its rows after the statement returned, on"
              + " a thread of its own, so they land after any lock the transaction held and after"
              + " a successor's claim; remove DELAYED (MariaDB ignores it for InnoDB tables"
              + " anyway), or run it without a lease bound",
          false);
    }
    if (outsideTheLock(kind, text)
        && f.options.outsideTransaction() == OutsideTransactionPolicy.REFUSE
        && f.rules.refusesEffectsOutsideTheLock()) {
      throw Losses.outsideTransactionRefused(lease, why(kind));
    }
    if (kind == SqlKind.PREPARE_TRANSACTION
        && f.isMySql()
        && f.strategy.refusesXaPrepare()
        && f.rules.checksCommitsWrittenAsSql()
        && StatementReader.isXaPrepare(f.ctx.lexer, text)) {
      throw Losses.xaPrepareRefused(lease);
    }
    if (kind == SqlKind.IMPLICIT_COMMIT && f.isMySql() && f.rules.checksLockTables()) {
      if (text != null && LockTables.leavesOut(text, lease.manager().table())) {
        throw Losses.lockTablesRefused(lease);
      }
    }
  }

  /**
   * Whether a statement of {@code kind} lands its effect outside the verified transaction's lock:
   * MySQL's implicit commits (but LOCK and UNLOCK TABLES, whose effect stays in the session and
   * which have rules of their own), routines (what they commit inside is past the lock), and
   * statements the database cannot run in a transaction.
   */
  boolean outsideTheLock(SqlKind kind, String text) {
    switch (kind) {
      case NON_TRANSACTIONAL:
      case ROUTINE:
        return true;
      case IMPLICIT_COMMIT:
        return text == null
            || (LockTables.lockedByName(text) == null
                && Abandoning.of(f.ctx.lexer, text) != Abandoning.UNLOCK_TABLES);
      default:
        return false;
    }
  }

  private String why(SqlKind kind) {
    switch (kind) {
      case ROUTINE:
        return "a routine (CALL, EXECUTE, BEGIN NOT ATOMIC) runs statements the fence cannot see,"
            + " and what it commits inside is past the verify's lock";
      case IMPLICIT_COMMIT:
        return "MySQL and MariaDB commit the open transaction before this statement and the"
            + " statement itself after it, outside any transaction the verify could lock";
      default:
        return "the database runs this statement outside any transaction, where the verify's lock"
            + " cannot hold";
    }
  }

  /**
   * A text holding one transaction-control statement ({@link #control}), and on MySQL/MariaDB the
   * XA branch begun as SQL remembered ({@link Abandoning#observe}): its XA ROLLBACK or XA COMMIT
   * ends the session's transaction.
   */
  <T> T run(
      Lease lease,
      StatementHandle st,
      SqlKind kind,
      SqlSummary summary,
      SqlCall<T> call,
      String text)
      throws SQLException {
    if (kind == SqlKind.IMPLICIT_COMMIT
        && f.isMySql()
        && Abandoning.of(f.ctx.lexer, text) == Abandoning.UNLOCK_TABLES) {
      Mode mode = f.view.mode();
      if (mode == Mode.AUTOCOMMIT || f.state.verified() == lease) {
        return unlockTables(lease, mode, call);
      }
      if (f.state.verified() == null
          && Boolean.FALSE.equals(f.view.driverSession().inTransaction())) {
        return f.runUnverified(call); // the server has no transaction open: it commits nothing
      }
    }
    if (kind == SqlKind.COMMIT_PREPARED
        && f.isMySql()
        && f.state.verified() == null
        && f.abandoning.onePhaseOfEndedBranch(f.ctx.lexer, text)) {
      // its XA END passed the checks of a commit; the IDLE branch still holds the verify's lock,
      // and a verify cannot run in it (XAER_RMFAIL): the lease's own state is checked once more
      if (!lease.isHeld()) {
        throw f.losses.refuse(lease, "it is no longer held by this process");
      }
      T result = f.runUnverified(call); // on failure the branch stays remembered, for close
      f.abandoning.observe(f.ctx.lexer, text);
      f.state.endTransaction();
      f.state.markSqlTransaction(false);
      return result;
    }
    T result = control(lease, st, kind, summary, call);
    if (f.isMySql()
        && (kind == SqlKind.BEGIN
            || kind == SqlKind.PREPARE_TRANSACTION
            || kind == SqlKind.COMMIT_PREPARED
            || kind == SqlKind.ROLLBACK_PREPARED)
        && f.abandoning.observe(f.ctx.lexer, text)) {
      f.state.endTransaction();
      f.state.markSqlTransaction(false);
    }
    return result;
  }

  /**
   * MySQL/MariaDB {@code UNLOCK TABLES} under a lease is never refused for want of a verify: under
   * LOCK TABLES the verify cannot read the lease table ("was not locked with LOCK TABLES"), and a
   * refused UNLOCK sent the pooled connection back with its tables locked (issue 25 item 6). In
   * autocommit mode no transaction is open, so it commits nothing and runs as it is; in the
   * verified transaction it commits implicitly, so it passes the checks of {@code commit()} first.
   * With autocommit off and no transaction open on the server (the driver's flag, after a rollback)
   * it commits nothing either and runs as it is; an unverified open transaction (writes the fence
   * did not see) takes the general rule.
   */
  <T> T unlockTables(Lease lease, Mode mode, SqlCall<T> call) throws SQLException {
    if (mode == Mode.AUTOCOMMIT) {
      return f.runUnverified(call);
    }
    f.checkCommit(lease);
    try {
      return f.runUnverified(call);
    } finally {
      f.state.endTransaction(); // MySQL committed it
      f.state.markSqlTransaction(false);
    }
  }

  /** A text holding one transaction-control statement of {@code kind}. */
  <T> T control(Lease lease, StatementHandle st, SqlKind kind, SqlSummary summary, SqlCall<T> call)
      throws SQLException {
    switch (kind) {
      case BEGIN:
        {
          Mode mode = f.view.mode();
          if (mode != Mode.AUTOCOMMIT && f.isMySql() && f.state.verified() != null) {
            f.checkCommit(lease); // MySQL commits the open transaction first
          }
          T result = f.runUnverified(call);
          if (f.isMySql() || f.state.verified() == null) {
            f.state.endTransaction();
          }
          f.state.markSqlTransaction(f.delegate.getAutoCommit());
          return result;
        }
      case COMMIT:
      case PREPARE_TRANSACTION:
        f.checkCommit(lease);
        if (f.state.verified() != null && f.verifier.ridesInCommit(f.state.verified())) {
          // PostgreSQL: every commit carries its proof; the user's own COMMIT text cannot carry
          // it, so it runs just before, as commit() would send it
          f.verifier.proveCommit(f.state.verified(), false);
        }
        try {
          return f.runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case ROLLBACK:
        try {
          return f.runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case ROLLBACK_TO:
        {
          T result = f.runUnverified(call);
          f.state.doubt(Doubt.SAVEPOINT_ROLLBACK); // PostgreSQL frees locks taken after it
          return result;
        }
      case ROLLBACK_PREPARED:
      case SET_TRANSACTION:
        return f.runUnverified(call); // writes nothing; must run before the transaction's verify
      case SAVEPOINT:
        {
          Mode mode = f.view.mode();
          if (mode == Mode.AUTOCOMMIT) {
            T result = f.runUnverified(call); // SQLite: SAVEPOINT begins a transaction
            f.state.markSqlTransaction(f.ctx.lexer.dialect == SqlDialect.SQLITE);
            return result;
          }
          f.verifyIfNeeded(lease, mode); // the savepoint comes after the verify
          return f.runUnverified(call);
        }
      case RELEASE:
        if (f.ctx.lexer.dialect != SqlDialect.SQLITE) {
          return f.runUnverified(call);
        }
        f.checkCommit(lease); // SQLite commits when the outermost savepoint is released
        try {
          return f.runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case SET_AUTOCOMMIT:
        if (f.state.verified() != null) {
          f.checkCommit(lease); // SET autocommit = 1 commits
        }
        try {
          return f.runUnverified(call);
        } finally {
          f.view.syncAutoCommit();
          f.state.endTransaction();
          f.state.markSqlTransaction(false);
        }
      case SESSION:
        return f.runUnverified(call); // its effect stays in the session: nothing to fence
      case IMPLICIT_COMMIT:
      case NON_TRANSACTIONAL:
      case COMMIT_PREPARED:
        return outsideTransaction(lease, st, kind, call);
      case ROUTINE:
        return routine(lease, st, call);
      default:
        return f.ordinary(lease, st, call);
    }
  }

  /**
   * A transaction ended by SQL (COMMIT, ROLLBACK, END, PREPARE TRANSACTION, SQLite's RELEASE). On
   * SQLite in manual-commit mode sqlite-jdbc would go on believing in a transaction SQLite no
   * longer has, and run later statements one by one in autocommit; a BEGIN puts one back.
   */
  void transactionEndedAsSql(SqlSummary summary) throws SQLException {
    f.state.endTransaction();
    boolean autoCommit = f.delegate.getAutoCommit();
    f.state.markSqlTransaction(summary.chain() && autoCommit);
    if (!autoCommit) {
      f.view.ensureSqliteTransaction();
    }
  }

  /**
   * Statements that cannot run inside a transaction, or that commit the open one first (MySQL's
   * implicit commits): in autocommit mode a verify runs as a statement of its own immediately
   * before (the two are not atomic; a transaction cannot hold both), inside a transaction the
   * verify runs again in it just before (MySQL then commits it, lock and all, before the statement
   * runs). PostgreSQL and SQLite refuse theirs inside a transaction themselves.
   */
  <T> T outsideTransaction(Lease lease, StatementHandle st, SqlKind kind, SqlCall<T> call)
      throws SQLException {
    Mode mode = f.view.mode();
    if (mode == Mode.AUTOCOMMIT) {
      if (f.options.autoCommit() == AutoCommitPolicy.REFUSE) {
        throw Losses.autoCommitRefused(lease);
      }
      try {
        f.verifier.verify(lease);
      } finally {
        f.state.endTransaction();
      }
      return f.runUnverified(call);
    }
    if (kind != SqlKind.IMPLICIT_COMMIT) {
      return f.ordinary(lease, st, call);
    }
    if (f.state.verified() != null) {
      f.checkCommit(lease);
      f.verifier.verifyAgain(lease);
    } else {
      f.view.ensureSqliteTransaction();
      f.verifier.verify(lease);
    }
    try {
      return f.run(st, call);
    } finally {
      f.state
          .endTransaction(); // MySQL committed around it: the next statement is a new transaction
      f.state.markSqlTransaction(false);
    }
  }

  /**
   * MySQL CALL, EXECUTE, BEGIN NOT ATOMIC: a fresh verify just before (even in a verified
   * transaction: the routine may commit, and what it commits is protected by that verify alone),
   * and again before anything after it.
   */
  <T> T routine(Lease lease, StatementHandle st, SqlCall<T> call) throws SQLException {
    Mode mode = f.view.mode();
    if (mode == Mode.AUTOCOMMIT) {
      return autoCommits.autoCommitStatement(lease, st, SqlKind.ROUTINE, call);
    }
    if (f.state.verified() == lease) {
      f.verifier.verifyAgain(lease);
    } else {
      f.view.ensureSqliteTransaction();
      f.verifier.verify(lease);
    }
    T result = f.run(st, call);
    f.state.doubt(Doubt.ROUTINE);
    return result;
  }
}
