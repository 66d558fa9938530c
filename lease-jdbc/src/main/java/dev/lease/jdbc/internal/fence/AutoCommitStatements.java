package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlKind;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A statement under a lease in autocommit mode runs as its own verified transaction ({@link
 * AutoCommitPolicy}): autocommit off, verify, the statement, commit, autocommit back on. A query
 * whose rows stream keeps that transaction open until its result set is done ({@link #pending}), as
 * it would in autocommit mode. Part of {@link TransactionFence}.
 */
final class AutoCommitStatements {

  private static final Logger log = LoggerFactory.getLogger(FenceContext.LOGGER);

  private final FenceSteps f;

  /** The statement whose autocommit query keeps its verified transaction open. */
  StatementHandle pending;

  AutoCommitStatements(FenceSteps f) {
    this.f = f;
  }

  /** A result set of {@code st} (or the statement itself) closed: its query is done. */
  void resultDone(StatementHandle st) throws SQLException {
    if (pending == st) {
      finishPending();
    }
  }

  /**
   * Ends the verified transaction an autocommit query kept open: committed like the statement's own
   * transaction would be (released-lease check in VERIFY mode, the lock taken again if a routine
   * ran), rolled back if poisoned or refused. If the driver cannot end it yet (a MySQL streaming
   * result set is still being read on another statement), it stays pending and the driver's own
   * error is thrown, as it would be in autocommit mode.
   */
  void finishPending() throws SQLException {
    if (pending == null) {
      return;
    }
    SQLException failure = null;
    boolean ended = false;
    boolean wasPoisoned = f.state.poisoned();
    try {
      if (wasPoisoned) {
        failure = f.losses.poisonedException("its autocommit query's transaction was rolled back");
        f.delegate.rollback();
      } else {
        if (f.state.reverify && f.state.verified() != null) {
          f.verifier.verifyAgain(f.state.verified());
        }
        f.checkStillHeld();
        f.delegate.commit();
      }
      ended = true;
    } catch (LeaseLostSQLException e) {
      failure = e; // refused: roll back
      try {
        f.delegate.rollback();
        ended = true;
      } catch (SQLException r) {
        e.addSuppressed(r);
      }
    } catch (SQLException e) {
      if (failure != null) {
        failure.addSuppressed(e);
      } else {
        failure = e;
      }
    }
    if (ended) {
      pending = null;
      f.state.flags &= ~TransactionState.PENDING;
      f.state.endTransaction();
      try {
        f.delegate.setAutoCommit(true);
      } catch (SQLException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  /** {@link #finishPending} where nothing may be thrown (close, endRequest, abort). */
  void finishPendingQuietly() {
    if (pending == null) {
      return;
    }
    try {
      finishPending();
    } catch (SQLException e) {
      log.debug("could not end an autocommit query's transaction", e);
      pending = null;
      f.state.flags &= ~TransactionState.PENDING;
      try {
        f.delegate.rollback();
        f.delegate.setAutoCommit(true);
      } catch (SQLException r) {
        log.debug("could not roll it back", r);
      }
      f.state.endTransaction();
    }
  }

  // ---- autocommit statements
  // ----------------------------------------------------------------------

  <T> T autoCommitStatement(Lease lease, StatementHandle st, SqlKind kind, SqlCall<T> call)
      throws SQLException {
    switch (f.options.autoCommit()) {
      case REFUSE:
        throw Losses.autoCommitRefused(lease);
      case VERIFY_ONLY:
        try {
          f.verifier.verify(lease);
          return f.run(st, call);
        } finally {
          f.state.endTransaction(); // the verify's autocommit transaction has ended; so has the
          // statement's
        }
      case VERIFIED_TRANSACTION:
      default:
        return asVerifiedTransaction(lease, st, kind, call);
    }
  }

  /**
   * Autocommit off, verify, the statement, commit, autocommit back on; rolled back on any failure.
   * A query whose rows the driver fetches as they are read (MySQL streaming, any fetch size) keeps
   * its transaction open until its result set or statement closes or the connection is used again,
   * as in autocommit mode; pgjdbc, which would read through a server-side cursor only because the
   * fence turned autocommit off, fetches without one as in autocommit mode.
   */
  <T> T asVerifiedTransaction(Lease lease, StatementHandle st, SqlKind kind, SqlCall<T> call)
      throws SQLException {
    if (!beginWrapped()) {
      // SQLite: BEGIN failed, a transaction begun as SQL is open: the statement runs in it
      f.state.markSqlTransaction(true);
      f.verifier.verify(lease);
      return f.run(st, call);
    }
    boolean keepOpen = false;
    int fetchSize = 0;
    boolean cursorFix = f.rules.keepsAutoCommitCursorsOpen() && st != null;
    T result;
    try {
      if (cursorFix && f.ctx.lexer.dialect == SqlDialect.POSTGRESQL) {
        fetchSize = st.driverStatement().getFetchSize();
        if (fetchSize > 0) {
          st.driverStatement().setFetchSize(0); // pgjdbc opens a portal only with autocommit off
        }
      }
      f.verifier.verify(lease);
      result = f.run(st, call);
      if (cursorFix
          && f.ctx.lexer.dialect == SqlDialect.MYSQL
          && returnsRows(result)
          && st.driverStatement().getFetchSize() != 0) {
        keepOpen = true; // streaming: the rows are read later, inside the transaction
        pending = st;
        f.state.flags |= TransactionState.PENDING;
        return result;
      }
      if (kind == SqlKind.ROUTINE) {
        f.verifier.verifyAgain(lease); // the routine may have committed and begun anew
      }
      f.checkNotPoisoned(); // lost while the statement ran, after its cancel could reach it
      f.checkStillHeld();
      f.delegate.commit();
    } catch (SQLException | RuntimeException e) {
      try {
        f.delegate.rollback();
      } catch (SQLException r) {
        e.addSuppressed(r);
      }
      try {
        f.delegate.setAutoCommit(true);
      } catch (SQLException r) {
        e.addSuppressed(r);
      }
      throw e;
    } finally {
      if (fetchSize > 0) {
        st.driverStatement().setFetchSize(fetchSize);
      }
      if (!keepOpen) {
        f.state.endTransaction();
      }
    }
    f.delegate.setAutoCommit(true);
    return result;
  }

  /**
   * {@code setAutoCommit(false)} for the wrapped transaction. False when SQLite refused its BEGIN
   * because a transaction begun as SQL is already open (sqlite-jdbc has then recorded manual
   * commit; its flag is put back).
   */
  boolean beginWrapped() throws SQLException {
    try {
      f.delegate.setAutoCommit(false);
      return true;
    } catch (SQLException e) {
      if (f.ctx.lexer.dialect == SqlDialect.SQLITE
          && String.valueOf(e.getMessage()).contains("within a transaction")
          && f.view.driverSession().repairSqliteAutoCommit(true)) {
        return false;
      }
      throw e;
    }
  }

  static boolean returnsRows(Object result) {
    return result instanceof ResultSet || Boolean.TRUE.equals(result);
  }
}
