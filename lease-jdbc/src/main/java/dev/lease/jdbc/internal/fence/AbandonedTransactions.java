package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.SQLException;
import java.sql.Statement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Transactions the fence must not leave open: a verified (or poisoned) one a pool handed on without
 * rolling back ({@link #abandoned}), one still open when the connection is closed or handed back
 * ({@link #closing}, {@link #endRequest}), and a refused one, which must always be abandonable
 * ({@link Abandoning}, issue 25 item 8). Part of {@link TransactionFence}.
 */
final class AbandonedTransactions {

  private static final Logger log = LoggerFactory.getLogger(FenceContext.LOGGER);

  private final FenceSteps f;
  private final AutoCommitStatements autoCommits;

  AbandonedTransactions(FenceSteps f, AutoCommitStatements autoCommits) {
    this.f = f;
    this.autoCommits = autoCommits;
  }

  /**
   * A verified (or poisoned) transaction met a statement with a different lease (or none) on
   * another thread than the one that verified it: a pool handed the connection on without rolling
   * back. The transaction is not the new borrower's to continue or commit.
   */
  boolean abandoned() {
    FencedTransaction t = f.state.txn;
    return t != null && t.by != Thread.currentThread() && f.rules.checksAbandonedTransactions();
  }

  void rollbackAbandoned(Lease now) throws SQLException {
    FencedTransaction t = f.state.txn;
    Lease was = t == null ? null : t.lease;
    log.warn(
        "rolled back a fenced transaction under {} that thread {} left open; the connection is now"
            + " used by {} under {} (the pool does not roll back on return)",
        was,
        t == null ? "?" : t.by.getName(),
        Thread.currentThread().getName(),
        now == null ? "no lease" : now);
    rollbackOpenTransaction();
    f.state.endTransaction();
  }

  /**
   * A poisoned transaction met a statement with no lease bound: nothing of it may commit, so it is
   * rolled back here and the statement runs as the borrower meant it, never refused for a lease it
   * does not hold (a pool without rollback on return handed the connection on, or the code left the
   * lease's scope without rolling back).
   */
  void rollbackPoisoned() throws SQLException {
    FencedTransaction t = f.state.txn;
    log.warn(
        "rolled back a poisoned transaction under {} left open on this connection; the connection"
            + " is now used with no lease bound",
        t == null ? "?" : t.lease);
    rollbackOpenTransaction();
    f.state.endTransaction();
  }

  /** Rolls back the open transaction: through JDBC, or as SQL if it was begun as SQL. */
  void rollbackOpenTransaction() throws SQLException {
    if (f.abandoning.xaOpen()) {
      f.abandoning.abandonXa(f.delegate); // else the pool gets the connection back in XA ACTIVE
    }
    if (!f.delegate.getAutoCommit()) {
      f.delegate.rollback();
      return;
    }
    try (Statement s = f.delegate.createStatement()) {
      s.execute("ROLLBACK"); // PostgreSQL warns and MySQL ignores it when none is open
    } catch (SQLException e) {
      log.debug("no transaction to roll back as SQL", e); // SQLite: none is active
    }
  }

  /** What a one-statement text does to abandon a transaction ({@link Abandoning#of}). */
  int abandons(SqlSummary summary, String text) {
    if (summary.count() != 1 || summary.ambiguous() || f.ctx.lexer == null) {
      return Abandoning.NONE;
    }
    return Abandoning.of(f.ctx.lexer, text);
  }

  /** A statement that only ends or abandons a refused transaction: it runs (issue 25 item 8). */
  <T> T abandon(int what, SqlCall<T> call, String text) throws SQLException {
    if (what == Abandoning.UNLOCK_TABLES) {
      rollbackOpenTransaction(); // UNLOCK TABLES would commit it implicitly
      f.state.endTransaction();
    }
    T result = f.runUnverified(call);
    if (what == Abandoning.XA_END) {
      f.abandoning.observe(f.ctx.lexer, text);
    }
    return result;
  }

  /**
   * The connection is closed or handed back. A verified or poisoned transaction still open, begun
   * with {@code setAutoCommit(false)} or as SQL, is rolled back here rather than left to the pool:
   * not every pool rolls back on return (Tomcat JDBC's {@code rollbackOnReturn} is off by default),
   * and the next borrower's commit would then commit a stale holder's writes. Never fails because
   * of a lease.
   */
  void closing() {
    try {
      // closing completes the statement, as in autocommit mode
      autoCommits.finishPendingQuietly();
      if ((f.state.poisoned() || f.state.verified() != null)
          && f.rules.rollsBackVerifiedTransactionAtClose()
          && !f.delegate.isClosed()) {
        rollbackOpenTransaction();
      }
    } catch (SQLException | RuntimeException e) {
      log.debug("could not roll back a fenced transaction at close", e);
    } finally {
      f.state.endTransaction();
    }
  }

  /**
   * A pool's request boundary (JDBC 4.3 {@code endRequest}: what happens to an open transaction is
   * left to the implementation): a verified or poisoned transaction still open is rolled back, as
   * at {@link #closing}, so the next borrower cannot commit it (review S8). If it cannot be rolled
   * back, its poison stays until a rollback.
   */
  void endRequest() {
    autoCommits.finishPendingQuietly();
    // also a transaction the fence never verified that the server has open under the bound lease
    // (writes through a driver object): the next borrower must not commit it
    if ((f.state.poisoned() || f.state.verified() != null || f.verifier.unprovenUnderLease())
        && f.rules.rollsBackVerifiedTransactionAtClose()) {
      try {
        if (!f.delegate.isClosed()) {
          rollbackOpenTransaction();
          f.state.endTransaction();
        }
      } catch (SQLException | RuntimeException e) {
        log.debug("could not roll back a fenced transaction at the end of a request", e);
      }
      return;
    }
    if (!f.state.poisoned()) {
      f.state.endTransaction();
    }
  }
}
