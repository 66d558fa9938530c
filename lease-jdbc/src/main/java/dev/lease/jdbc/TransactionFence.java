package dev.lease.jdbc;

import dev.lease.core.Lease;
import dev.lease.core.LeaseListener;
import dev.lease.core.LossReason;
import dev.lease.core.internal.LeaseInternals;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
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
 *       is sent; a lone control statement runs by its own rule ({@link #control}).
 *   <li><b>The verify</b> runs lazily at the first ordinary statement of a transaction (and before
 *       {@code setSavepoint} and vendor {@code unwrap}), never at {@code setAutoCommit(false)}
 *       (checklist 7, 17); exactly once per transaction, under one lease (checklist 24); again
 *       after anything that may have taken its lock away: a driver error, a savepoint rollback, a
 *       MySQL CALL ({@link #reverify}).
 *   <li><b>The database refuses</b>: a verify whose lease is gone fails in the server, so nothing
 *       sent with it or after it runs; {@link #refusedByDatabase} turns its error into LF001.
 *       <b>Every commit carries its proof</b> ({@link #commit}): on PostgreSQL the verify rides in
 *       the COMMIT's round trip; elsewhere it runs before the COMMIT when the fence's picture is in
 *       doubt, including when the driver says the verified transaction ended behind the fence
 *       ({@link #endedBehindTheFence}). The mechanism is a {@link Refusal}; DESIGN-NOTE.md.
 *   <li><b>Where the transaction is</b> is asked of the driver, not assumed ({@link
 *       DriverSession}): a BEGIN sent as SQL before the lease was bound, {@code SET autocommit} as
 *       SQL, a deadlock that rolled the transaction back. With a driver that cannot tell, the fence
 *       assumes only what is safe: no transaction is open unless it saw one begin.
 *   <li><b>Autocommit statements</b> run as their own verified transaction ({@link
 *       AutoCommitPolicy}); a query's transaction stays open while its result set streams (MySQL)
 *       or is read without a server-side cursor (pgjdbc), as it would in autocommit mode.
 *   <li><b>Refusal poisons</b> the transaction: every statement and commit fail until a rollback;
 *       rollback and close never fail because of a lease (checklist 19, 20). <b>Loss</b> poisons
 *       the transaction verified under the lost lease and cancels its running statement, and only
 *       that transaction: each transaction has a generation, and a loss reported as it ends does
 *       not reach the next one.
 * </ul>
 *
 * Connections are used by one thread at a time; only the loss listener touches this from another
 * thread, through the volatile fields and under the fence's monitor.
 */
final class TransactionFence {

  private static final Logger log = LoggerFactory.getLogger(TransactionFence.class);

  // ---- owner-thread state bits: 0 means "nothing to do for a statement with no lease bound"

  /** A fenced transaction is open: verified, refused or poisoned ({@link #txn} is set). */
  private static final int FENCED = 1;

  /** A transaction begun as SQL while autocommit is on ({@link #sqlTransaction}). */
  private static final int SQL_TRANSACTION = 1 << 2;

  /**
   * An autocommit query's transaction stays open until its result set is done ({@link #pending}).
   */
  private static final int PENDING = 1 << 3;

  /** MySQL session bounds may have to be restored before a statement with no lease. */
  private static final int SESSION_CHECK = 1 << 4;

  /** How the connection stands when a lease-bound transaction starts. */
  private enum Mode {
    /** Autocommit: each statement commits on its own. */
    AUTOCOMMIT,
    /** {@code setAutoCommit(false)}: the driver keeps a transaction open. */
    JDBC,
    /** Autocommit on, but a transaction begun as SQL (BEGIN) is open. */
    SQL
  }

  /**
   * One fenced transaction: the lease it was verified (or refused) under, the thread that did it,
   * whether the database confirmed it, its poison, the statement running in it. Written by the
   * owner thread; the loss listener reads and poisons it under the fence's monitor.
   */
  private static final class FencedTransaction {
    final Lease lease;
    final Thread by;
    volatile boolean confirmed;
    volatile boolean poisoned;
    volatile String poisonReason;
    volatile Statement running;
    Lease.Registration registration;

    FencedTransaction(Lease lease) {
      this.lease = lease;
      this.by = Thread.currentThread();
    }
  }

  private final Connection delegate;
  private final FencingOptions options;
  private final boolean strict;

  private int flags;

  /**
   * The open fenced transaction, null when none is: one object per transaction, so its identity is
   * its generation (a loss registered for one never reaches the next).
   */
  private volatile FencedTransaction txn;

  /** The verify's lock may be gone (error, savepoint rollback, CALL): verify again before use. */
  private boolean reverify;

  /** A transaction begun as SQL that the fence saw begin (for drivers that cannot tell). */
  private boolean sqlTransaction;

  /** The statement whose autocommit query keeps its verified transaction open. */
  private FencingStatement pending;

  private SqlLexer lexer;
  private DriverSession session;

  /** A lost lease's statement being cancelled on another thread (review L1); null when none. */
  private volatile Statement cancelling;

  /** The driver's options were checked for silent reconnects and replays. */
  private boolean driverChecked;

  /** A statement failed before {@link #session} was looked up: its flags start out stale. */
  private boolean failedBeforeSession;

  /** What may end a refused transaction, and the XA branch begun as SQL (issue 25 item 8). */
  private final Abandoning abandoning = new Abandoning();

  /** The lease the open transaction was verified under; null when none was. */
  private Lease verified() {
    FencedTransaction t = txn;
    return t != null && t.confirmed ? t.lease : null;
  }

  private boolean poisoned() {
    FencedTransaction t = txn;
    return t != null && t.poisoned;
  }

  TransactionFence(Connection delegate, FencingOptions options) {
    this.delegate = delegate;
    this.options = options;
    this.strict = options.mode() == FencingMode.STRICT;
    if (SessionBounds.used() && !options.weakened(Weakening.NO_SESSION_RESTORE)) {
      flags = SESSION_CHECK;
    }
    Weakening.warn(options.weakenings(), delegate);
  }

  /**
   * The pass-through test of the hot path: true when a statement needs no fencing work at all. No
   * allocation: a thread-local read and a field read.
   */
  boolean idle() {
    return flags == 0 && cancelling == null && LeaseInternals.currentOrNull() == null;
  }

  /** A statement that passed through failed: the driver's view of the session may be stale. */
  SQLException failed(SQLException e) {
    DriverSession s = session;
    if (s != null) {
      s.failed();
    } else {
      failedBeforeSession = true;
    }
    return e;
  }

  // ---- statements
  // ---------------------------------------------------------------------------------

  /** Where a statement's text comes from, for {@link FencingStatement#summary}. */
  static final int TEXT = 0;

  static final int PREPARED = 1;
  static final int BATCH = 2;
  static final int ROW_CHANGE = 3;

  /**
   * What the user called, for a first statement that carries the verify along ({@link #piggyback}):
   * none (any other call: it never does), {@code execute}, {@code executeQuery}, {@code
   * executeUpdate}, {@code executeLargeUpdate}.
   */
  static final int SHAPE_NONE = 0;

  static final int SHAPE_EXECUTE = 1;
  static final int SHAPE_QUERY = 2;
  static final int SHAPE_UPDATE = 3;
  static final int SHAPE_LARGE_UPDATE = 4;

  /** First statements that carried the verify along and ran (tests count them). */
  private int piggybacked;

  int piggybacked() {
    return piggybacked;
  }

  /**
   * Runs a statement (or an updatable result set's row change) under the fencing rules.
   *
   * @param st the fenced statement, or null for a row change of a result set without one
   * @param sql the text of {@code execute(String)} and friends; null otherwise
   */
  <T> T execute(FencingStatement st, int source, String sql, SqlCall<T> call) throws SQLException {
    return execute(st, source, sql, call, SHAPE_NONE);
  }

  /**
   * Like {@link #execute(FencingStatement, int, String, SqlCall)}, for a call whose result the
   * fence can present itself when the statement carried the verify along ({@code shape}, one of the
   * {@code SHAPE_} constants).
   */
  <T> T execute(FencingStatement st, int source, String sql, SqlCall<T> call, int shape)
      throws SQLException {
    if (cancelling != null) {
      awaitCancel();
    }
    if (pending != null) {
      finishPending();
    }
    Lease lease = LeaseInternals.currentOrNull();
    if (lease == null) {
      return unleased(st, source, sql, call);
    }
    long summary = summary(st, source, sql, lexer(lease));
    int count = SqlSummary.count(summary);
    int kind = count == 1 ? SqlSummary.single(summary) : SqlKind.OTHER;
    FencedTransaction open = txn;
    Lease owner = open == null ? null : open.lease;
    if (owner != null && lease != owner && abandoned()) {
      rollbackAbandoned(lease);
    }
    if (poisoned()) {
      if (count == 1 && isRollback(kind)) {
        return xaControl(lease, st, kind, summary, call, text(st, source, sql));
      }
      int abandon = abandons(count, summary, st, source, sql);
      if (abandon != Abandoning.NONE) {
        return abandon(abandon, call, text(st, source, sql));
      }
      throw poisonedException(null);
    }
    if (verified() != null && lease != verified()) {
      throw leaseChanged(lease);
    }
    if (SqlSummary.ambiguous(summary)
        || (SqlSummary.hasControl(summary) && (count > 1 || source == BATCH))) {
      throw mixed(lease, summary, source);
    }
    if (count == 0) {
      return call.call(); // nothing but comments: nothing to fence
    }
    if (kind == SqlKind.OTHER) {
      if (isMySql() && (count > 1 || source == BATCH)) {
        try {
          return ordinary(lease, st, call, SHAPE_NONE, source, sql);
        } finally {
          inDoubt();
        }
      }
      return ordinary(lease, st, call, count == 1 ? shape : SHAPE_NONE, source, sql);
    }
    if (kind == SqlKind.PREPARE_TRANSACTION
        && isMySql()
        && strict
        && !options.weakened(Weakening.NO_COMMIT_CHECKS)
        && isXaPrepare(st, source, sql)) {
      throw xaPrepareRefused(lease);
    }
    if (kind == SqlKind.IMPLICIT_COMMIT
        && isMySql()
        && !options.weakened(Weakening.LOCK_TABLES_UNCHECKED)) {
      String text = text(st, source, sql);
      if (text != null && LockTables.leavesOut(text, lease.manager().table())) {
        throw lockTablesRefused(lease);
      }
    }
    return xaControl(lease, st, kind, summary, call, text(st, source, sql));
  }

  /** A LOCK TABLES under a lease whose list leaves out the lease table ({@link LockTables}). */
  private static LeaseLostSQLException lockTablesRefused(Lease lease) {
    String table = lease.manager().table();
    return new LeaseLostSQLException(
        "refused LOCK TABLES under "
            + lease
            + " before it was sent: its list leaves out the lease table "
            + table
            + ", which every statement under a lease reads to verify it (MySQL/MariaDB let a"
            + " session holding table locks read only the tables it locked); add \""
            + table
            + " READ\" to the list (claims and renewals of every lease in that table then wait"
            + " until UNLOCK TABLES), or lock rows with SELECT ... FOR UPDATE instead",
        LeaseLostSQLException.TRANSACTION_CONTROL_MIXED,
        lease,
        null);
  }

  /**
   * {@link #control}, and on MySQL/MariaDB the XA branch begun as SQL remembered ({@link
   * Abandoning#observe}): its XA ROLLBACK or XA COMMIT ends the session's transaction.
   */
  private <T> T xaControl(
      Lease lease, FencingStatement st, int kind, long summary, SqlCall<T> call, String text)
      throws SQLException {
    if (kind == SqlKind.IMPLICIT_COMMIT
        && isMySql()
        && Abandoning.of(lexer, text) == Abandoning.UNLOCK_TABLES) {
      Mode mode = mode();
      if (mode == Mode.AUTOCOMMIT || verified() == lease) {
        return unlockTables(lease, mode, call);
      }
      if (verified() == null && Boolean.FALSE.equals(driverSession().inTransaction())) {
        return runUnverified(call); // the server has no transaction open: it commits nothing
      }
    }
    if (kind == SqlKind.COMMIT_PREPARED
        && isMySql()
        && verified() == null
        && abandoning.onePhaseOfEndedBranch(lexer, text)) {
      // its XA END passed the checks of a commit; the IDLE branch still holds the verify's lock,
      // and a verify cannot run in it (XAER_RMFAIL): the lease's own state is checked once more
      if (!lease.isHeld()) {
        throw refuse(lease, "it is no longer held by this process");
      }
      T result = runUnverified(call); // on failure the branch stays remembered, for close
      abandoning.observe(lexer, text);
      endTransaction();
      markSqlTransaction(false);
      return result;
    }
    T result = control(lease, st, kind, summary, call);
    if (isMySql()
        && (kind == SqlKind.BEGIN
            || kind == SqlKind.PREPARE_TRANSACTION
            || kind == SqlKind.COMMIT_PREPARED
            || kind == SqlKind.ROLLBACK_PREPARED)
        && abandoning.observe(lexer, text)) {
      endTransaction();
      markSqlTransaction(false);
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
  private <T> T unlockTables(Lease lease, Mode mode, SqlCall<T> call) throws SQLException {
    if (mode == Mode.AUTOCOMMIT) {
      return runUnverified(call);
    }
    checkCommit(lease);
    try {
      return runUnverified(call);
    } finally {
      endTransaction(); // MySQL committed it
      markSqlTransaction(false);
    }
  }

  /** What a one-statement text does to abandon a transaction ({@link Abandoning#of}). */
  private int abandons(int count, long summary, FencingStatement st, int source, String sql) {
    if (count != 1 || SqlSummary.ambiguous(summary) || lexer == null) {
      return Abandoning.NONE;
    }
    return Abandoning.of(lexer, text(st, source, sql));
  }

  /** A statement that only ends or abandons a refused transaction: it runs (issue 25 item 8). */
  private <T> T abandon(int what, SqlCall<T> call, String text) throws SQLException {
    if (what == Abandoning.UNLOCK_TABLES) {
      rollbackOpenTransaction(); // UNLOCK TABLES would commit it implicitly
      endTransaction();
    }
    T result = runUnverified(call);
    if (what == Abandoning.XA_END) {
      abandoning.observe(lexer, text);
    }
    return result;
  }

  /**
   * MySQL/MariaDB: after a batch or a multi-statement text, or once a driver object that can run
   * SQL was handed out, the driver's in-transaction flag (read after the whole call) no longer
   * proves that the verified transaction is still the open one: an implicit commit the lexer does
   * not know (MariaDB's CREATE TEMPORARY SEQUENCE was one) or a commit through the driver object
   * ends it and frees STRICT's lock, and a later statement opens a new one, so the flag says "in
   * transaction" again. The next statement and the commit verify again.
   */
  private void inDoubt() {
    if (verified() != null && !options.weakened(Weakening.NO_REVERIFY)) {
      reverify = true;
    }
  }

  private boolean isXaPrepare(FencingStatement st, int source, String sql) {
    String text = text(st, source, sql);
    if (text == null) {
      return false;
    }
    List<String> w = Abandoning.words(lexer, text, 2);
    return w.size() >= 2 && w.get(0).equals("XA") && w.get(1).equals("PREPARE");
  }

  /**
   * MariaDB 10.6+ releases a transaction's shared locks at XA PREPARE, STRICT's share lock on the
   * lease row included: a branch prepared under term t no longer holds term t+1's claim back, and
   * its XA COMMIT (by the transaction manager, from any connection) could commit after the
   * successor's claim. Refused before it is sent; the branch stays as it was (IDLE after XA END).
   */
  private static LeaseLostSQLException xaPrepareRefused(Lease lease) {
    return new LeaseLostSQLException(
        "refused XA PREPARE under "
            + lease
            + " before it was sent: MySQL/MariaDB release the transaction's shared locks at"
            + " XA PREPARE (MariaDB 10.6+), STRICT's lock on the lease row included, so a prepared"
            + " branch could be committed after a successor's claim; end the branch with"
            + " XA COMMIT xid ONE PHASE (it commits with the lock held) or XA ROLLBACK, or use"
            + " FencingMode.VERIFY (whose guarantee rests on timing) if two-phase commit is required",
        LeaseLostSQLException.TRANSACTION_CONTROL_MIXED,
        lease,
        null);
  }

  private static String text(FencingStatement st, int source, String sql) {
    return source == TEXT ? sql : st == null ? null : st.sql;
  }

  /** No lease bound: pass through, after cleaning up what a lease-bound user left. */
  private <T> T unleased(FencingStatement st, int source, String sql, SqlCall<T> call)
      throws SQLException {
    if ((flags & SESSION_CHECK) != 0) {
      flags &= ~SESSION_CHECK;
      SessionBounds.restore(delegate);
    }
    if (verified() != null || poisoned()) {
      if (abandoned()) {
        rollbackAbandoned(null);
      } else {
        long summary = summary(st, source, sql, lexer(null));
        int kind = SqlSummary.count(summary) == 1 ? SqlSummary.single(summary) : 0;
        int abandon = abandons(SqlSummary.count(summary), summary, st, source, sql);
        if (abandon != Abandoning.NONE) {
          return abandon(abandon, call, text(st, source, sql));
        }
        if (isRollback(kind)) {
          try {
            return call.call();
          } finally {
            if (kind == SqlKind.ROLLBACK) {
              endTransaction();
            } else if (kind == SqlKind.ROLLBACK_TO) {
              rolledBackToSavepoint(); // the verify's lock may be gone (review S3)
            }
          }
        }
        if (poisoned()) {
          throw poisonedException(null);
        }
        throw leaseChanged(null);
      }
    }
    sqlTransaction = false; // what the text did is not read without a lease: assume nothing
    flags &= ~SQL_TRANSACTION;
    try {
      return call.call();
    } catch (SQLException e) {
      throw failed(e);
    }
  }

  /** An ordinary statement: runs in a verified transaction. */
  private <T> T ordinary(Lease lease, FencingStatement st, SqlCall<T> call) throws SQLException {
    return ordinary(lease, st, call, SHAPE_NONE, TEXT, null);
  }

  /**
   * An ordinary statement: runs in a verified transaction; the first of a transaction begun with
   * {@code setAutoCommit(false)} carries the verify along where it can ({@link #piggyback}).
   */
  private <T> T ordinary(
      Lease lease, FencingStatement st, SqlCall<T> call, int shape, int source, String sql)
      throws SQLException {
    if (verified() == lease) {
      if (!reverify && endedBehindTheFence()) {
        reverify = true; // an implicit commit, a COMMIT through a driver object: verify anew
      }
      if (reverify) {
        // MySQL family: a CALL/EXECUTE may have run SET autocommit = 1 behind Connector/J's cached
        // flag (review S7): mode() asks the server before the cached flag is trusted
        if ((isMySql() || delegate.getAutoCommit()) && mode() == Mode.AUTOCOMMIT) {
          // the error ended the transaction begun as SQL (a deadlock, SQLite's ON CONFLICT
          // ROLLBACK): the statement is an autocommit statement now
          endTransaction();
          return autoCommitStatement(lease, st, SqlKind.OTHER, call);
        }
        verifyAgain(lease);
      }
      return run(st, call);
    }
    if (lease.isLost()) {
      // known lost (the database refused it, or its deadline passed): refused here, before any
      // round trip — not even the MySQL flag refresh that mode() may send after the refusal's error
      verify(lease);
    }
    switch (mode()) {
      case JDBC:
        if (shape != SHAPE_NONE && piggybackable(lease, st, source)) {
          return piggyback(lease, st, source, sql, shape);
        }
        ensureSqliteTransaction();
        verify(lease);
        return run(st, call);
      case SQL:
        verify(lease);
        if (Boolean.FALSE.equals(driverSession().inTransaction())) {
          // the driver's flags were stale: the verify ran in autocommit, no transaction is open
          endTransaction();
          markSqlTransaction(false);
          return autoCommitStatement(lease, st, SqlKind.OTHER, call);
        }
        return run(st, call);
      default:
        return autoCommitStatement(lease, st, SqlKind.OTHER, call);
    }
  }

  /** A text holding one transaction-control statement of {@code kind}. */
  private <T> T control(Lease lease, FencingStatement st, int kind, long summary, SqlCall<T> call)
      throws SQLException {
    switch (kind) {
      case SqlKind.BEGIN:
        {
          Mode mode = mode();
          if (mode != Mode.AUTOCOMMIT && isMySql() && verified() != null) {
            checkCommit(lease); // MySQL commits the open transaction first
          }
          T result = runUnverified(call);
          if (isMySql() || verified() == null) {
            endTransaction();
          }
          markSqlTransaction(delegate.getAutoCommit());
          return result;
        }
      case SqlKind.COMMIT:
      case SqlKind.PREPARE_TRANSACTION:
        checkCommit(lease);
        if (verified() != null && ridesInCommit(verified())) {
          // PostgreSQL: every commit carries its proof; the user's own COMMIT text cannot carry
          // it, so it runs just before, as commit() would send it
          proveCommit(verified(), false);
        }
        try {
          return runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case SqlKind.ROLLBACK:
        try {
          return runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case SqlKind.ROLLBACK_TO:
        {
          T result = runUnverified(call);
          if (verified() != null) {
            reverify = true; // PostgreSQL frees row locks taken after the savepoint
          }
          return result;
        }
      case SqlKind.ROLLBACK_PREPARED:
      case SqlKind.SET_TRANSACTION:
        return runUnverified(call); // writes nothing; must run before the transaction's verify
      case SqlKind.SAVEPOINT:
        {
          Mode mode = mode();
          if (mode == Mode.AUTOCOMMIT) {
            T result = runUnverified(call); // SQLite: SAVEPOINT begins a transaction
            markSqlTransaction(lexer.dialect == SqlDialect.SQLITE);
            return result;
          }
          verifyIfNeeded(lease, mode); // the savepoint comes after the verify
          return runUnverified(call);
        }
      case SqlKind.RELEASE:
        if (lexer.dialect != SqlDialect.SQLITE) {
          return runUnverified(call);
        }
        checkCommit(lease); // SQLite commits when the outermost savepoint is released
        try {
          return runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case SqlKind.SET_AUTOCOMMIT:
        if (verified() != null) {
          checkCommit(lease); // SET autocommit = 1 commits
        }
        try {
          return runUnverified(call);
        } finally {
          syncAutoCommit();
          endTransaction();
          markSqlTransaction(false);
        }
      case SqlKind.IMPLICIT_COMMIT:
      case SqlKind.NON_TRANSACTIONAL:
      case SqlKind.COMMIT_PREPARED:
        return outsideTransaction(lease, st, kind, call);
      case SqlKind.ROUTINE:
        return routine(lease, st, call);
      default:
        return ordinary(lease, st, call);
    }
  }

  /**
   * A transaction ended by SQL (COMMIT, ROLLBACK, END, PREPARE TRANSACTION, SQLite's RELEASE). On
   * SQLite in manual-commit mode sqlite-jdbc would go on believing in a transaction SQLite no
   * longer has, and run later statements one by one in autocommit; a BEGIN puts one back.
   */
  private void transactionEndedAsSql(long summary) throws SQLException {
    endTransaction();
    boolean autoCommit = delegate.getAutoCommit();
    markSqlTransaction(SqlSummary.chain(summary) && autoCommit);
    if (!autoCommit) {
      ensureSqliteTransaction();
    }
  }

  /**
   * Statements that cannot run inside a transaction, or that commit the open one first (MySQL's
   * implicit commits): in autocommit mode a verify runs as a statement of its own immediately
   * before (the two are not atomic; a transaction cannot hold both), inside a transaction the
   * verify runs again in it just before (MySQL then commits it, lock and all, before the statement
   * runs). PostgreSQL and SQLite refuse theirs inside a transaction themselves.
   */
  private <T> T outsideTransaction(Lease lease, FencingStatement st, int kind, SqlCall<T> call)
      throws SQLException {
    Mode mode = mode();
    if (mode == Mode.AUTOCOMMIT) {
      if (options.autoCommit() == AutoCommitPolicy.REFUSE) {
        throw autoCommitRefused(lease);
      }
      try {
        verify(lease);
      } finally {
        endTransaction();
      }
      return runUnverified(call);
    }
    if (kind != SqlKind.IMPLICIT_COMMIT) {
      return ordinary(lease, st, call);
    }
    if (verified() != null) {
      checkCommit(lease);
      verifyAgain(lease);
    } else {
      ensureSqliteTransaction();
      verify(lease);
    }
    try {
      return run(st, call);
    } finally {
      endTransaction(); // MySQL committed around it: the next statement is a new transaction
      markSqlTransaction(false);
    }
  }

  /**
   * MySQL CALL, EXECUTE, BEGIN NOT ATOMIC: a fresh verify just before (even in a verified
   * transaction: the routine may commit, and what it commits is protected by that verify alone),
   * and again before anything after it.
   */
  private <T> T routine(Lease lease, FencingStatement st, SqlCall<T> call) throws SQLException {
    Mode mode = mode();
    if (mode == Mode.AUTOCOMMIT) {
      return autoCommitStatement(lease, st, SqlKind.ROUTINE, call);
    }
    if (verified() == lease) {
      verifyAgain(lease);
    } else {
      ensureSqliteTransaction();
      verify(lease);
    }
    T result = run(st, call);
    reverify = true;
    return result;
  }

  /**
   * Before a call that may reach the database outside the wrapper's statements ({@code
   * setSavepoint}, vendor {@code unwrap}): verifies now if a lease is bound and a transaction is
   * open.
   */
  void verifyIfInTransaction() throws SQLException {
    if (pending != null) {
      finishPending();
    }
    Lease lease = LeaseInternals.currentOrNull();
    checkNotPoisoned();
    if (lease == null) {
      return;
    }
    if (verified() != null) {
      if (lease != verified()) {
        if (!abandoned()) {
          throw leaseChanged(lease);
        }
        rollbackAbandoned(lease);
      } else {
        if (reverify) {
          verifyAgain(lease);
        }
        return;
      }
    }
    lexer(lease);
    Mode mode = mode();
    if (mode != Mode.AUTOCOMMIT) {
      verifyIfNeeded(lease, mode);
    }
  }

  /**
   * Before {@code unwrap} hands out a driver object, whose calls bypass the wrapper (review S4).
   * Under a bound lease, inside a transaction: after its verify ({@link #verifyIfInTransaction});
   * on MySQL/MariaDB the transaction is then in doubt ({@link #inDoubt}): the commit verifies
   * again. In autocommit mode, where what the object runs commits on its own (pgjdbc's COPY): never
   * the driver's own {@code Connection} or {@code Statement} (every statement through it would
   * commit unfenced), and other vendor objects only after a verify run as a statement of its own,
   * as for statements that cannot run in a transaction (not atomic; refused with {@link
   * AutoCommitPolicy#REFUSE}), which refuses a lease no longer held.
   */
  void beforeUnwrap(Class<?> iface) throws SQLException {
    verifyIfInTransaction();
    Lease lease = LeaseInternals.currentOrNull();
    if (lease == null || options.weakened(Weakening.NO_UNWRAP_CHECKS)) {
      return;
    }
    if (mode() != Mode.AUTOCOMMIT) {
      if (verified() != null && isMySql()) {
        // its commit() can end the verified transaction (and STRICT's lock) and its next
        // statement open another, which the driver's flag cannot tell apart (review: unwrap)
        inDoubt();
      }
      return;
    }
    if (Connection.class.isAssignableFrom(iface) || Statement.class.isAssignableFrom(iface)) {
      throw new SQLException(
          "refused to unwrap "
              + iface.getName()
              + " in autocommit mode under "
              + lease
              + ": it is the driver's own "
              + (Connection.class.isAssignableFrom(iface) ? "Connection" : "Statement")
              + ", whose statements would each commit past the fence; unwrap it inside a"
              + " transaction (setAutoCommit(false)) and use it only there, or unwrap a vendor"
              + " interface that is not a java.sql type (PGConnection, MysqlConnection)");
    }
    if (options.autoCommit() == AutoCommitPolicy.REFUSE) {
      throw autoCommitRefused(lease);
    }
    try {
      verify(lease); // refuses a lease no longer held
    } finally {
      endTransaction();
    }
  }

  private void verifyIfNeeded(Lease lease, Mode mode) throws SQLException {
    if (verified() == lease) {
      if (reverify) {
        verifyAgain(lease);
      }
      return;
    }
    if (mode == Mode.JDBC) {
      ensureSqliteTransaction();
    }
    verify(lease);
  }

  // ---- connection calls
  // ---------------------------------------------------------------------------

  void commit() throws SQLException {
    if (pending != null) {
      finishPending();
    }
    checkNotPoisoned();
    Lease lease = LeaseInternals.currentOrNull();
    if (verified() != null && lease != verified() && abandoned()) {
      rollbackAbandoned(lease);
    }
    Lease proof = proofLease(lease);
    if (proof != null && proof == verified() && endedBehindTheFence()) {
      reverify = true;
    }
    boolean rides = ridesInCommit(proof);
    if (reverify && verified() != null && !rides) {
      verifyAgain(verified());
    }
    checkStillHeld();
    try {
      if (rides) {
        commitWithVerify(proof);
      } else {
        if (proof != null && proof != verified() && options.refusal().commitCarriesProof()) {
          verify(proof); // writes the fence did not see (a driver object): prove them now
        }
        delegate.commit();
      }
    } catch (SQLException e) {
      // only errors that say the session was gone before the commit arrived: any other failure
      // of a commit leaves its outcome unknown, and the driver's error says so better
      // a driver's error may carry no SQLState (Set.of(..).contains(null) throws, and an exception
      // escaping here would skip the fence's bookkeeping of the failed commit)
      String state = e.getSQLState();
      if (state != null && SESSION_GONE.contains(state)) {
        LeaseLostSQLException lost = lostDuring(e);
        if (lost != null) {
          throw lost;
        }
      }
      throw e;
    } finally {
      endTransaction();
    }
  }

  // ---- every commit carries its proof
  // -------------------------------------------------------------

  /**
   * The lease a commit must prove, or null when it commits nothing fenced: the lease the open
   * transaction was verified under; else the bound lease if the server has a transaction open that
   * the fence never verified (writes through an object that bypassed the wrapper). The driver is
   * asked; a driver that cannot tell (sqlite-jdbc) leaves only the verified transaction to prove.
   */
  private Lease proofLease(Lease bound) {
    Lease v = verified();
    if (v != null) {
      return v;
    }
    if (bound == null || !options.refusal().commitCarriesProof() || poisoned()) {
      return null;
    }
    return Boolean.TRUE.equals(driverSession().inTransaction()) ? bound : null;
  }

  /** The server has a transaction open under the bound lease that the fence never verified. */
  private boolean unprovenUnderLease() {
    Lease bound = LeaseInternals.currentOrNull();
    return verified() == null && bound != null && proofLease(bound) != null;
  }

  /**
   * True when the driver says the server has no transaction open although the fence verified one:
   * it ended behind the fence (a MySQL implicit commit such as MariaDB's {@code CREATE TEMPORARY
   * SEQUENCE}, a COMMIT sent through a driver object), so what runs now runs in a transaction no
   * verify covers. Free: the drivers keep the flag of the last OK packet or ReadyForQuery.
   */
  private boolean endedBehindTheFence() {
    if (!options.refusal().readsServerState() || verified() == null) {
      return false;
    }
    return Boolean.FALSE.equals(driverSession().inTransaction());
  }

  /**
   * PostgreSQL: the commit's proof rides in the COMMIT's own round trip, always (no round trip, but
   * one more statement per commit: measured in docs/benchmarks.md). A read-only transaction carries
   * one too: it writes no rows, but PostgreSQL delivers its NOTIFY at commit, which must not reach
   * listeners after a successor's claim; its proof is the plain verify ({@link #proveCommit}),
   * STRICT's lock being refused there. Not where {@link ReadOnlyPolicy#SKIP} skipped the verify:
   * nothing was verified.
   */
  private boolean ridesInCommit(Lease proof) throws SQLException {
    return proof != null
        && options.refusal().commitCarriesProof()
        && lexer(proof).dialect == SqlDialect.POSTGRESQL
        && !((options.readOnly() == ReadOnlyPolicy.SKIP
                || options.weakened(Weakening.NO_READ_ONLY_PROOF))
            && readOnlyWithoutLocks(proof));
  }

  /**
   * Sends {@code <verify>; COMMIT} as one text: when the lease is not held the verify raises its
   * error in the server, which skips the COMMIT and leaves the transaction aborted; the fence then
   * rolls it back and refuses ({@link #refusedByDatabase}). pgjdbc's own commit() afterwards finds
   * no transaction open and sends nothing.
   */
  private void commitWithVerify(Lease lease) throws SQLException {
    proveCommit(lease, true);
    delegate.commit();
  }

  /**
   * Runs the commit's proof ({@link Refusal#commitProofSql}), followed by {@code COMMIT} in the
   * same text when {@code commit}; on failure rolls back and throws (LF001 for a refusal).
   */
  private void proveCommit(Lease lease, boolean commit) throws SQLException {
    Duration idle = idleBound(lease);
    // a read-only transaction (PostgreSQL refuses FOR KEY SHARE there) carries the plain verify
    boolean lock = strict && !readOnlyWithoutLocks(lease);
    // prepared, so that pgjdbc server-prepares the text after its threshold like any statement
    try (PreparedStatement ps =
        delegate.prepareStatement(
            options.refusal().commitProofSql(lease, lock) + (commit ? ";\nCOMMIT" : ""))) {
      LeaseInternals.bindVerify(lease, ps, 1, lock, idle);
      ps.execute();
    } catch (SQLException e) {
      driverSession().failed();
      try {
        delegate.rollback();
      } catch (SQLException r) {
        e.addSuppressed(r);
      }
      if (refusedInServer(e)) {
        throw refusedByDatabase(lease, e);
      }
      throw e;
    }
  }

  /** Never fails because of a lease. */
  void rollback() throws SQLException {
    if (pending != null) {
      finishPending(); // an autocommit statement completes; the driver then refuses rollback()
    }
    boolean lost =
        !options.weakened(Weakening.LOSS_AS_DATABASE_ERROR) && (poisoned() || notHeld(txn));
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
      if (!lost || !closedQuietly()) {
        throw e;
      }
      log.debug("no rollback needed: the session of a lost lease's transaction is gone", e);
    } finally {
      endTransaction();
    }
  }

  /**
   * SQLStates that say the session was gone before the call reached the server: connection does not
   * exist (pgjdbc, HikariCP's closed proxy), PostgreSQL's idle-in-transaction termination.
   */
  private static final java.util.Set<String> SESSION_GONE = java.util.Set.of("08003", "25P03");

  /** True if {@code t} is under a lease that was lost or whose local deadline passed. */
  private static boolean notHeld(FencedTransaction t) {
    Lease lease = t == null ? null : t.lease;
    return lease != null && !lease.isReleased() && !lease.isHeld();
  }

  private boolean closedQuietly() {
    try {
      return delegate.isClosed();
    } catch (SQLException e) {
      return false;
    }
  }

  /**
   * A statement or commit of the open transaction failed while its lease is no longer held (lost,
   * or past its local deadline): typically the server ended the session because of the lease's own
   * idle-in-transaction bound while this process stood still (PostgreSQL 25P03, then "connection
   * closed"; MariaDB's idle_transaction_timeout), before the loss was noticed here. The caller is
   * told the lease was lost (poisoned, {@value LeaseLostSQLException#POISONED}), with the server's
   * error as its cause; null if the lease is still held.
   */
  private LeaseLostSQLException lostDuring(SQLException e) {
    FencedTransaction t = txn;
    if (!notHeld(t) || options.weakened(Weakening.LOSS_AS_DATABASE_ERROR)) {
      return null;
    }
    Lease lease = t.lease;
    poison(
        lease,
        "its lease was lost ("
            + lease.lossReason().map(Enum::name).orElse("local deadline passed")
            + ") while it was open");
    return poisonedException("then the database failed it: " + e.getMessage(), e);
  }

  /** A savepoint rollback stays in the transaction, but the verify's lock may be gone. */
  void rolledBackToSavepoint() {
    if (verified() != null && !options.weakened(Weakening.NO_REVERIFY)) {
      reverify = true;
    }
  }

  /**
   * {@code setAutoCommit(true)} with a transaction open commits it (JDBC spec): the same checks as
   * {@link #commit}, and a poisoned one is rolled back instead and the caller told; a redundant
   * call changes nothing (checklist 8, 9).
   */
  void setAutoCommit(boolean autoCommit) throws SQLException {
    if (pending != null) {
      finishPending();
    }
    boolean was = delegate.getAutoCommit();
    if (autoCommit == was) {
      delegate.setAutoCommit(autoCommit);
      return;
    }
    if (autoCommit && poisoned()) {
      LeaseLostSQLException refused =
          poisonedException("setAutoCommit(true) would commit it; it was rolled back instead");
      try {
        delegate.rollback();
      } catch (SQLException e) {
        refused.addSuppressed(e);
      }
      endTransaction();
      delegate.setAutoCommit(true);
      throw refused;
    }
    if (autoCommit) {
      Lease proof = proofLease(LeaseInternals.currentOrNull());
      if (proof != null && ridesInCommit(proof)) {
        checkStillHeld();
        commitWithVerify(proof); // the driver then finds nothing open to commit
      } else if (proof != null && proof == verified()) {
        checkCommit(proof);
      } else if (proof != null) {
        verify(proof); // writes the fence did not see: prove them before they commit
      }
    }
    try {
      delegate.setAutoCommit(autoCommit);
    } finally {
      if (!poisoned()) { // poison stays until rollback, even across setAutoCommit(false)
        endTransaction();
        markSqlTransaction(false);
      }
    }
  }

  /** What {@code getAutoCommit()} reports: autocommit while an autocommit query is pending. */
  boolean getAutoCommit() throws SQLException {
    return pending != null || delegate.getAutoCommit();
  }

  /** Before {@code setTransactionIsolation}, {@code setReadOnly} and the like. */
  void beforeSessionChange() throws SQLException {
    if (pending != null) {
      finishPending();
    }
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
      if (pending != null) {
        finishPendingQuietly(); // closing completes the statement, as in autocommit mode
      }
      if ((poisoned() || verified() != null)
          && !options.weakened(Weakening.NO_ROLLBACK_AT_CLOSE)
          && !delegate.isClosed()) {
        rollbackOpenTransaction();
      }
    } catch (SQLException | RuntimeException e) {
      log.debug("could not roll back a fenced transaction at close", e);
    } finally {
      endTransaction();
    }
  }

  /** The transaction ended outside the connection (an XA branch, through its XAResource). */
  void endedElsewhere() {
    markSqlTransaction(false);
    endTransaction();
  }

  /** The connection was aborted: forget the transaction (the driver ends it). */
  void closed() {
    pending = null;
    flags &= ~PENDING;
    endTransaction();
  }

  /**
   * A pool's request boundary (JDBC 4.3 {@code endRequest}: what happens to an open transaction is
   * left to the implementation): a verified or poisoned transaction still open is rolled back, as
   * at {@link #closing}, so the next borrower cannot commit it (review S8). If it cannot be rolled
   * back, its poison stays until a rollback.
   */
  void endRequest() {
    if (pending != null) {
      finishPendingQuietly();
    }
    // also a transaction the fence never verified that the server has open under the bound lease
    // (writes through a driver object): the next borrower must not commit it
    if ((poisoned() || verified() != null || unprovenUnderLease())
        && !options.weakened(Weakening.NO_ROLLBACK_AT_CLOSE)) {
      try {
        if (!delegate.isClosed()) {
          rollbackOpenTransaction();
          endTransaction();
        }
      } catch (SQLException | RuntimeException e) {
        log.debug("could not roll back a fenced transaction at the end of a request", e);
      }
      return;
    }
    if (!poisoned()) {
      endTransaction();
    }
  }

  /**
   * Before {@code releaseSavepoint}: a poisoned transaction is refused (SQLite commits when the
   * outermost savepoint is released; review S8).
   */
  void beforeReleaseSavepoint() throws SQLException {
    if (!options.weakened(Weakening.NO_COMMIT_CHECKS)) {
      checkNotPoisoned();
    }
  }

  // ---- the rest of a statement's result set
  // ---------------------------------------------------------------

  /** A result set of {@code st} (or the statement itself) closed: its query is done. */
  void resultDone(FencingStatement st) throws SQLException {
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
  private void finishPending() throws SQLException {
    SQLException failure = null;
    boolean ended = false;
    boolean wasPoisoned = poisoned();
    try {
      if (wasPoisoned) {
        failure = poisonedException("its autocommit query's transaction was rolled back");
        delegate.rollback();
      } else {
        if (reverify && verified() != null) {
          verifyAgain(verified());
        }
        checkStillHeld();
        delegate.commit();
      }
      ended = true;
    } catch (LeaseLostSQLException e) {
      failure = e; // refused: roll back
      try {
        delegate.rollback();
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
      flags &= ~PENDING;
      endTransaction();
      try {
        delegate.setAutoCommit(true);
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
  private void finishPendingQuietly() {
    try {
      finishPending();
    } catch (SQLException e) {
      log.debug("could not end an autocommit query's transaction", e);
      pending = null;
      flags &= ~PENDING;
      try {
        delegate.rollback();
        delegate.setAutoCommit(true);
      } catch (SQLException r) {
        log.debug("could not roll it back", r);
      }
      endTransaction();
    }
  }

  // ---- autocommit statements
  // ----------------------------------------------------------------------

  private <T> T autoCommitStatement(Lease lease, FencingStatement st, int kind, SqlCall<T> call)
      throws SQLException {
    switch (options.autoCommit()) {
      case REFUSE:
        throw autoCommitRefused(lease);
      case VERIFY_ONLY:
        try {
          verify(lease);
          return run(st, call);
        } finally {
          endTransaction(); // the verify's autocommit transaction has ended; so has the statement's
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
  private <T> T asVerifiedTransaction(Lease lease, FencingStatement st, int kind, SqlCall<T> call)
      throws SQLException {
    if (!beginWrapped()) {
      // SQLite: BEGIN failed, a transaction begun as SQL is open: the statement runs in it
      markSqlTransaction(true);
      verify(lease);
      return run(st, call);
    }
    boolean keepOpen = false;
    int fetchSize = 0;
    boolean cursorFix = !options.weakened(Weakening.NO_CURSOR_FIX) && st != null;
    T result;
    try {
      if (cursorFix && lexer.dialect == SqlDialect.POSTGRESQL) {
        fetchSize = st.delegate.getFetchSize();
        if (fetchSize > 0) {
          st.delegate.setFetchSize(0); // pgjdbc opens a portal only with autocommit off
        }
      }
      verify(lease);
      result = run(st, call);
      if (cursorFix
          && lexer.dialect == SqlDialect.MYSQL
          && returnsRows(result)
          && st.delegate.getFetchSize() != 0) {
        keepOpen = true; // streaming: the rows are read later, inside the transaction
        pending = st;
        flags |= PENDING;
        return result;
      }
      if (kind == SqlKind.ROUTINE) {
        verifyAgain(lease); // the routine may have committed and begun anew
      }
      checkNotPoisoned(); // lost while the statement ran, after its cancel could reach it
      checkStillHeld();
      delegate.commit();
    } catch (SQLException | RuntimeException e) {
      try {
        delegate.rollback();
      } catch (SQLException r) {
        e.addSuppressed(r);
      }
      try {
        delegate.setAutoCommit(true);
      } catch (SQLException r) {
        e.addSuppressed(r);
      }
      throw e;
    } finally {
      if (fetchSize > 0) {
        st.delegate.setFetchSize(fetchSize);
      }
      if (!keepOpen) {
        endTransaction();
      }
    }
    delegate.setAutoCommit(true);
    return result;
  }

  /**
   * {@code setAutoCommit(false)} for the wrapped transaction. False when SQLite refused its BEGIN
   * because a transaction begun as SQL is already open (sqlite-jdbc has then recorded manual
   * commit; its flag is put back).
   */
  private boolean beginWrapped() throws SQLException {
    try {
      delegate.setAutoCommit(false);
      return true;
    } catch (SQLException e) {
      if (lexer.dialect == SqlDialect.SQLITE
          && String.valueOf(e.getMessage()).contains("within a transaction")
          && driverSession().repairSqliteAutoCommit(true)) {
        return false;
      }
      throw e;
    }
  }

  private static boolean returnsRows(Object result) {
    return result instanceof ResultSet || Boolean.TRUE.equals(result);
  }

  // ---- where the transaction is
  // -------------------------------------------------------------------

  /**
   * How the connection stands for a new lease-bound transaction, from the driver where it can tell:
   * a transaction begun as SQL before the lease was bound is found, and MySQL Connector/J's cached
   * autocommit is brought in line with the server first.
   */
  private Mode mode() throws SQLException {
    DriverSession s = driverSession();
    if (s.isMySqlFamily()) {
      s.refresh(delegate); // after an error, the flags describe the session before it
      syncAutoCommit();
    }
    if (!delegate.getAutoCommit()) {
      return Mode.JDBC;
    }
    Boolean open = s.inTransaction();
    if (open == null) {
      open = sqlTransaction; // only a BEGIN the fence saw succeed, under a lease
    }
    return open ? Mode.SQL : Mode.AUTOCOMMIT;
  }

  /**
   * MySQL Connector/J keeps reporting the autocommit mode it last set itself; after {@code SET
   * autocommit} ran as SQL the server's flag says otherwise. The driver is told the server's mode
   * (it sends the same SET again, which changes nothing on the server).
   */
  private void syncAutoCommit() throws SQLException {
    DriverSession s = driverSession();
    Boolean server = s.serverAutoCommit();
    if (server != null && server != delegate.getAutoCommit()) {
      log.debug("SET autocommit ran as SQL; telling the driver autocommit is {}", server);
      delegate.setAutoCommit(server);
    }
  }

  private void markSqlTransaction(boolean open) {
    sqlTransaction = open;
    if (open) {
      flags |= SQL_TRANSACTION;
    } else {
      flags &= ~SQL_TRANSACTION;
    }
  }

  /**
   * SQLite: a COMMIT or ROLLBACK written as SQL, or an error that rolled back (ON CONFLICT
   * ROLLBACK, an interrupt), leaves sqlite-jdbc believing in a transaction SQLite no longer has;
   * statements would then commit one by one. A BEGIN puts one back (or fails: one is open).
   */
  private void ensureSqliteTransaction() throws SQLException {
    if (lexer.dialect != SqlDialect.SQLITE || options.weakened(Weakening.NO_DRIVER_SESSION)) {
      return;
    }
    try (Statement s = delegate.createStatement()) {
      s.execute("BEGIN");
    } catch (SQLException e) {
      if (!String.valueOf(e.getMessage()).contains("within a transaction")) {
        throw e;
      }
    }
  }

  private DriverSession driverSession() {
    DriverSession s = session;
    if (s == null) {
      s =
          options.weakened(Weakening.NO_DRIVER_SESSION)
              ? DriverSession.UNKNOWN
              : DriverSession.of(delegate);
      if (failedBeforeSession) {
        s.failed();
      }
      session = s;
    }
    return s;
  }

  private boolean isMySql() {
    return lexer.dialect == SqlDialect.MYSQL;
  }

  // ---- reading the text
  // ---------------------------------------------------------------------------

  /** The lexer of this connection's database: the lease's, else the connection's metadata. */
  private SqlLexer lexer(Lease lease) throws SQLException {
    if (lease != null && !driverChecked) {
      driverChecked = true;
      FencedDriver.refuseSilentReplay(driverSession().silentReplay(), lease);
    }
    SqlLexer l = lexer;
    if (l == null) {
      String product =
          lease != null
              ? lease.manager().databaseProduct()
              : delegate.getMetaData().getDatabaseProductName();
      l = SqlLexer.of(SqlDialect.ofProduct(product));
      lexer = l;
    }
    return l;
  }

  private long summary(FencingStatement st, int source, String sql, SqlLexer lexer) {
    long s;
    switch (source) {
      case TEXT:
        s = lexer.summarize(sql);
        break;
      case ROW_CHANGE:
        return SqlSummary.of(1 << SqlKind.OTHER, 1, SqlKind.OTHER, 0);
      default:
        s = st.summary(source, lexer);
    }
    if (options.weakened(Weakening.LEADING_KEYWORD)) {
      return leadingKeywordOnly(st, source, sql, lexer);
    }
    if (options.weakened(Weakening.UNKNOWN_IMPLICIT_COMMITS)
        && SqlSummary.has(s, SqlKind.IMPLICIT_COMMIT)) {
      int single = SqlSummary.single(s);
      return SqlSummary.of(
          (SqlSummary.kinds(s) & ~(1 << SqlKind.IMPLICIT_COMMIT)) | (1 << SqlKind.OTHER),
          SqlSummary.count(s),
          single == SqlKind.IMPLICIT_COMMIT ? SqlKind.OTHER : single,
          s & (SqlSummary.AMBIGUOUS | SqlSummary.CHAIN));
    }
    return s;
  }

  /** The first release's reading, for negative controls: the first statement's kind only. */
  private static long leadingKeywordOnly(
      FencingStatement st, int source, String sql, SqlLexer lexer) {
    String text = source == TEXT ? sql : st == null ? null : st.sql;
    List<SqlStatement> all = text == null ? List.of() : lexer.statements(text);
    int kind = all.isEmpty() ? SqlKind.OTHER : all.get(0).kind();
    return SqlSummary.of(1 << kind, 1, kind, 0);
  }

  private static boolean isRollback(int kind) {
    return kind == SqlKind.ROLLBACK
        || kind == SqlKind.ROLLBACK_TO
        || kind == SqlKind.ROLLBACK_PREPARED;
  }

  // ---- the verify in the first statement's round trip
  // -------------------------------------------------------------

  /**
   * True if a statement prepared now should remember its parameters: the option is on and a lease
   * of a PostgreSQL manager is bound (with none bound nothing is asked of the driver; a statement
   * prepared before its lease was bound verifies separately).
   */
  boolean mayPiggyback() {
    if (!options.piggybackVerify()) {
      return false;
    }
    Lease lease = LeaseInternals.currentOrNull();
    return lease != null && "PostgreSQL".equals(lease.manager().databaseProduct());
  }

  /**
   * Whether this first statement of a transaction begun with {@code setAutoCommit(false)} can carry
   * the verify in its round trip. PostgreSQL only: pgjdbc sends a text of several statements as one
   * Parse/Bind/Execute per statement and a single Sync, and the server runs them in order in the
   * open transaction. Not: a batch, a callable statement, generated keys (pgjdbc would take the
   * verify's rows for the keys: PgStatement.executeInternal takes the first result), a fetch size
   * (a portal per statement; the cursor read is long anyway), a read-only transaction (FOR KEY
   * SHARE is refused there; the plain verify runs), parameters that cannot be set twice (streams,
   * LOBs), a lease not held (refused locally, nothing sent).
   */
  private boolean piggybackable(Lease lease, FencingStatement st, int source) throws SQLException {
    if (st == null
        || lexer.dialect != SqlDialect.POSTGRESQL
        || !options.piggybackVerify()
        || (source != TEXT && source != PREPARED)) {
      return false;
    }
    if (source == PREPARED
        && !(st instanceof FencingPreparedStatement
            && ((FencingPreparedStatement) st).canReplay())) {
      return false;
    }
    return st.delegate.getFetchSize() <= 0
        && !delegate.isReadOnly()
        && !readOnlyByDefault()
        && lease.isHeld();
  }

  /**
   * Runs {@code <verify>; <statement>} as one text in one round trip; the verify's row is read here
   * and the statement's results are presented as if it had run alone. The verify runs first on the
   * server and takes its lock (STRICT) before the statement runs. No row: the transaction is
   * refused and poisoned exactly as after a separate verify; the statement's effect is in the
   * transaction and goes with its rollback, and nothing of it is handed to the caller.
   */
  @SuppressWarnings("unchecked")
  private <T> T piggyback(Lease lease, FencingStatement st, int source, String sql, int shape)
      throws SQLException {
    Duration idle = idleBound(lease);
    String verifySql = options.refusal().verifySql(lease, strict);
    List<Object> values = LeaseInternals.verifyParameters(lease, strict, idle);
    FencedTransaction t = transaction(lease);
    Statement s;
    boolean held = false;
    boolean rows;
    try {
      if (source == TEXT) {
        s = st.delegate;
        t.running = s;
        rows = s.execute(withLiterals(verifySql, values) + ";\n" + sql);
      } else {
        FencingPreparedStatement fps = (FencingPreparedStatement) st;
        PreparedStatement ps = fps.combined(verifySql, values.size());
        LeaseInternals.bindVerify(lease, ps, 1, strict, idle);
        s = ps;
        st.results = ps;
        t.running = ps;
        rows = ps.execute();
      }
      piggybacked++;
      if (rows) {
        try (ResultSet v = s.getResultSet()) {
          held = v.next();
        }
      }
      rows = s.getMoreResults();
    } catch (SQLException e) {
      // the verify or the statement failed (PostgreSQL aborts the transaction either way, and
      // skips what was sent after the failure): the transaction stays unverified
      afterError();
      if (refusedInServer(e)) {
        piggybacked++; // carried along: the server refused it and ran nothing after it
        throw refusedByDatabase(lease, e);
      }
      if (poisoned()) {
        throw poisonedException("its statement failed after the loss: " + e.getMessage(), e);
      }
      throw e;
    } finally {
      t.running = null;
    }
    if (!held && !options.weakened(Weakening.PIGGYBACK_IGNORES_REFUSAL)) {
      // only a verify that returns no row instead of failing (Refusal.CLIENT) gets here: the
      // statement sent along has run
      drain(s);
      throw refusedByDatabase(lease, null);
    }
    markVerified(lease);
    notify(lease, l -> l.transactionVerified(lease));
    try {
      switch (shape) {
        case SHAPE_QUERY:
          if (!rows) {
            throw new SQLException("No results were returned by the query.", "02000");
          }
          return (T) s.getResultSet();
        case SHAPE_UPDATE:
          if (rows) {
            throw new SQLException("A result was returned when none was expected.", "0100E");
          }
          return (T) Integer.valueOf(s.getUpdateCount());
        case SHAPE_LARGE_UPDATE:
          if (rows) {
            throw new SQLException("A result was returned when none was expected.", "0100E");
          }
          return (T) Long.valueOf(s.getLargeUpdateCount());
        default:
          return (T) Boolean.valueOf(rows);
      }
    } catch (SQLException e) {
      afterError();
      throw e;
    }
  }

  /** Nothing of a refused statement's results reaches the caller. */
  private static void drain(Statement s) {
    try {
      while (s.getMoreResults() || s.getUpdateCount() != -1) {
        // discard
      }
    } catch (SQLException e) {
      log.debug("could not discard a refused statement's results", e);
    }
  }

  /**
   * The verify's text with its parameters as literals, for a plain {@code Statement} (which has no
   * parameters): numbers as digits, strings (the lease name, validated by LeaseNames; the holder
   * and the timeout, made by the library) as {@code E''} literals with quotes and backslashes
   * escaped, which reads the same whatever {@code standard_conforming_strings} is. The verify's
   * text has no {@code ?} but its placeholders.
   */
  static String withLiterals(String verifySql, List<Object> values) {
    StringBuilder b = new StringBuilder(verifySql.length() + 64);
    int next = 0;
    for (int i = 0; i < verifySql.length(); i++) {
      char c = verifySql.charAt(i);
      if (c != '?') {
        b.append(c);
        continue;
      }
      Object v = values.get(next++);
      if (v instanceof Number) {
        b.append(((Number) v).longValue());
      } else {
        String text = String.valueOf(v);
        b.append("E'");
        for (int j = 0; j < text.length(); j++) {
          char x = text.charAt(j);
          if (x == '\\' || x == '\'') {
            b.append(x);
          }
          b.append(x);
        }
        b.append('\'');
      }
    }
    if (next != values.size()) {
      throw new IllegalStateException("verify text and parameters differ: " + verifySql);
    }
    return b.toString();
  }

  // ---- the verify
  // ---------------------------------------------------------------------------------

  private Duration idleBound(Lease lease) {
    return options.idleInTransactionTimeout() != null
        ? options.idleInTransactionTimeout()
        : lease.manager().timings().leaseDuration();
  }

  /** Verifies again in the open transaction (its lock may be gone); stays verified. */
  private void verifyAgain(Lease lease) throws SQLException {
    if (!delegate.getAutoCommit()) {
      ensureSqliteTransaction(); // an error may have rolled SQLite's transaction back
    }
    reverify = false;
    FencedTransaction t = txn;
    if (t != null) {
      t.confirmed = false; // until the database confirms it again
    }
    verify(lease);
  }

  /** MySQL/MariaDB 1100: "Table '...' was not locked with LOCK TABLES". */
  private static final int ER_TABLE_NOT_LOCKED = 1100;

  private void verify(Lease lease) throws SQLException {
    if (options.readOnly() == ReadOnlyPolicy.SKIP && readOnlyWithoutLocks(lease)) {
      markVerified(lease); // nothing to verify; later statements still check the bound lease
      return;
    }
    if (!lease.isHeld()) {
      throw refuse(
          lease,
          lease.term() == 0
              // term 0: a placeholder for a lease this process has never claimed (the agent's
              // replica in leader mode), so "no longer held" would mislead
              ? "this process does not hold it (another process holds it, or it has not been"
                  + " claimed yet)"
              : "it is no longer held by this process ("
                  + lease.lossReason().map(Enum::name).orElse("released")
                  + ")");
    }
    Duration idle =
        options.idleInTransactionTimeout() != null
            ? options.idleInTransactionTimeout()
            : lease.manager().timings().leaseDuration();
    if ("SQLite".equals(lease.manager().databaseProduct())) {
      awaitRenewal(lease);
    }
    boolean lock = strict && !readOnlyWithoutLocks(lease);
    // MySQL/MariaDB STRICT: the verify reads the session's bounds along (other databases: none)
    long[] session =
        lock && lexer != null && lexer.dialect == SqlDialect.MYSQL ? new long[] {-1, -1} : null;
    boolean held;
    try {
      held =
          LeaseInternals.verifyInTransaction(
              lease, delegate, options.refusal().verifySql(lease, lock), lock, idle, session);
      if (held && session != null && session[0] >= 0) {
        applySessionBounds(lease, session, idle);
      }
    } catch (SQLException e) {
      // the transaction may be half-aborted (PostgreSQL) or still open (MySQL lock wait timeout):
      // poison it so nothing commits, and give the caller the database's own error
      driverSession().failed();
      if (refusedInServer(e)) {
        throw refusedByDatabase(lease, e);
      }
      poison(lease, "its verify failed: " + e.getMessage());
      if (isMySql() && e.getErrorCode() == ER_TABLE_NOT_LOCKED) {
        throw new SQLException(
            "the verify of "
                + lease
                + " cannot read the lease table "
                + lease.manager().table()
                + ": this connection holds table locks (LOCK TABLES, taken before the lease was"
                + " bound) that leave it out; roll back and run UNLOCK TABLES (never refused under a"
                + " lease with no transaction open), or add \""
                + lease.manager().table()
                + " READ\" to the LOCK TABLES list",
            e.getSQLState(),
            e.getErrorCode(),
            e);
      }
      throw e;
    }
    if (!held) {
      throw refusedByDatabase(lease, null);
    }
    markVerified(lease);
    notify(lease, l -> l.transactionVerified(lease));
  }

  private void markVerified(Lease lease) {
    FencedTransaction t = transaction(lease);
    t.confirmed = true;
    if (t.registration == null) {
      // the listener knows its transaction: a loss never reaches the next one
      FencedTransaction mine = options.weakened(Weakening.NO_GENERATIONS) ? null : t;
      t.registration = lease.onLoss(l -> leaseLost(l, mine));
    }
  }

  /** The open fenced transaction under {@code lease}; a new one if none is (owner thread). */
  private FencedTransaction transaction(Lease lease) {
    FencedTransaction t = txn;
    if (t != null && t.lease == lease) {
      return t;
    }
    if (t != null && t.registration != null) {
      t.registration.close();
    }
    t = new FencedTransaction(lease);
    synchronized (this) {
      txn = t;
    }
    flags |= FENCED;
    return t;
  }

  /**
   * Whether the server will refuse every write of this transaction: then there is nothing for
   * STRICT's lock to order (PostgreSQL refuses {@code FOR KEY SHARE} there, SQLState 25006, found
   * by SpringTransactionTest with {@code readOnly=true}; SQLite's strict verify is a write) and
   * {@link ReadOnlyPolicy#SKIP} may skip the verify. The server is asked, not {@code isReadOnly()}:
   * pgjdbc answers the flag from memory and makes the server transaction read-only only when it
   * sends the BEGIN itself, so a BEGIN or {@code SET TRANSACTION READ WRITE} sent as SQL leaves a
   * flagged connection's transaction writable (review S1). The extra round trip runs only when the
   * flag is set or the server reported a read-only session default ({@link PgSessionDefaults}).
   * SQLite: sqlite-jdbc's flag is the open mode ({@code SQLITE_OPEN_READONLY}, enforced by SQLite;
   * it refuses to set it on an open connection). MySQL/MariaDB: no server variable tells the open
   * transaction's access mode ({@code START TRANSACTION READ WRITE} leaves {@code @@tx_read_only}
   * at 1 on MariaDB 10.11), so the answer there is always no; InnoDB allows the share lock in a
   * read-only transaction anyway.
   */
  private boolean readOnlyWithoutLocks(Lease lease) throws SQLException {
    String product = lease.manager().databaseProduct();
    if ("SQLite".equals(product) || options.weakened(Weakening.TRUST_READ_ONLY_FLAG)) {
      return delegate.isReadOnly();
    }
    if (!"PostgreSQL".equals(product) || !(delegate.isReadOnly() || readOnlyByDefault())) {
      return false;
    }
    try (Statement s = delegate.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('transaction_read_only')")) {
      return rs.next() && "on".equals(rs.getString(1));
    }
  }

  private PgSessionDefaults pgDefaults;

  /** PostgreSQL: the session's default access mode is read-only ({@link PgSessionDefaults}). */
  private boolean readOnlyByDefault() {
    PgSessionDefaults d = pgDefaults;
    if (d == null) {
      d = PgSessionDefaults.of(delegate);
      pgDefaults = d;
    }
    return d.readOnlyByDefault();
  }

  /**
   * SQLite's busy handler has no queue, so back-to-back writers under a lease could starve the
   * keeper's renewal; a transaction that has not started yet lets an in-flight renewal go first
   * (InnoDB and PostgreSQL queue the renewal themselves).
   */
  private static void awaitRenewal(Lease lease) {
    try {
      LeaseInternals.awaitRenewal(lease, lease.manager().timings().attemptTimeout());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * STRICT on MySQL/MariaDB: the verify read the session's lock-wait and idle bounds; set ours when
   * they differ (a new session, or one a pool reset), remembering the session's own for borrowers
   * without a lease ({@link SessionBounds}).
   */
  private void applySessionBounds(Lease lease, long[] current, Duration idle) throws SQLException {
    Duration lockWait =
        options.lockWaitTimeout() != null
            ? options.lockWaitTimeout()
            : lease.manager().timings().leaseDuration();
    List<String> statements =
        LeaseInternals.strictSessionStatements(lease.manager(), idle, lockWait);
    if (SessionBounds.afterVerify(
            delegate,
            current,
            SessionBounds.seconds(lockWait.toMillis()),
            SessionBounds.seconds(idle.toMillis()),
            statements)
        && !options.weakened(Weakening.NO_SESSION_RESTORE)) {
      flags |= SESSION_CHECK;
    }
  }

  // ---- running statements
  // -------------------------------------------------------------------------

  private <T> T run(FencingStatement st, SqlCall<T> call) throws SQLException {
    FencedTransaction t = txn;
    if (t != null) {
      t.running = st == null ? null : st.delegate;
    }
    try {
      return call.call();
    } catch (SQLException e) {
      afterError();
      if (t != null && refusedInServer(e)) {
        // a verify the driver sent again on its own (MariaDB transactionReplay) was refused
        throw refusedByDatabase(t.lease, e);
      }
      if (poisoned()) {
        // the lease was lost while the statement ran and the loss cancelled it
        throw poisonedException("its statement failed after the loss: " + e.getMessage(), e);
      }
      LeaseLostSQLException lost = lostDuring(e);
      if (lost != null) {
        throw lost;
      }
      throw e;
    } finally {
      if (t != null) {
        t.running = null;
      }
    }
  }

  /** Transaction control and statements that need no verify: only the bookkeeping of errors. */
  private <T> T runUnverified(SqlCall<T> call) throws SQLException {
    try {
      return call.call();
    } catch (SQLException e) {
      afterError();
      throw e;
    }
  }

  /**
   * A statement failed: the server may have rolled the transaction back (MySQL deadlock, lock wait
   * timeout with innodb_rollback_on_timeout, a reconnect; SQLite ON CONFLICT ROLLBACK) and with it
   * the verify's lock. Verify again before anything else runs in it.
   */
  private void afterError() {
    driverSession().failed();
    if (verified() != null && !options.weakened(Weakening.NO_REVERIFY)) {
      reverify = true;
    }
    DriverSession s = session;
    if (sqlTransaction && (s == null || !s.hasExactState())) {
      markSqlTransaction(false); // unknown now: assume none (the safe side)
    }
  }

  // ---- a pool that did not roll back
  // --------------------------------------------------------------

  /**
   * A verified (or poisoned) transaction met a statement with a different lease (or none) on
   * another thread than the one that verified it: a pool handed the connection on without rolling
   * back. The transaction is not the new borrower's to continue or commit.
   */
  private boolean abandoned() {
    FencedTransaction t = txn;
    return t != null
        && t.by != Thread.currentThread()
        && !options.weakened(Weakening.NO_ABANDON_CHECK);
  }

  private void rollbackAbandoned(Lease now) throws SQLException {
    FencedTransaction t = txn;
    Lease was = t == null ? null : t.lease;
    log.warn(
        "rolled back a fenced transaction under {} that thread {} left open; the connection is now"
            + " used by {} under {} (the pool does not roll back on return)",
        was,
        t == null ? "?" : t.by.getName(),
        Thread.currentThread().getName(),
        now == null ? "no lease" : now);
    rollbackOpenTransaction();
    endTransaction();
  }

  /** Rolls back the open transaction: through JDBC, or as SQL if it was begun as SQL. */
  private void rollbackOpenTransaction() throws SQLException {
    if (abandoning.xaOpen()) {
      abandoning.abandonXa(delegate); // else the pool gets the connection back in XA ACTIVE
    }
    if (!delegate.getAutoCommit()) {
      delegate.rollback();
      return;
    }
    try (Statement s = delegate.createStatement()) {
      s.execute("ROLLBACK"); // PostgreSQL warns and MySQL ignores it when none is open
    } catch (SQLException e) {
      log.debug("no transaction to roll back as SQL", e); // SQLite: none is active
    }
  }

  // ---- loss, refusal, poison
  // ----------------------------------------------------------------------

  /**
   * The verified lease was lost (on a lease thread): poison the transaction and cancel its
   * statement, if the transaction it was registered for is still the open one.
   */
  private void leaseLost(Lease lease, FencedTransaction mine) {
    Statement s;
    FencedTransaction t;
    synchronized (this) {
      t = txn;
      if (t == null || t.lease != lease || (mine != null && t != mine)) {
        return; // that transaction has ended; the open one is another's
      }
      if (!poisonLocked(t, "its lease was lost while it was open")) {
        return;
      }
      s = t.running;
    }
    poisoned(lease, "its lease was lost while it was open");
    if (s != null) {
      // off the reporting thread: pgjdbc and Connector/J open a new connection to cancel, and the
      // thread that noticed the loss may be a keeper timer other leases depend on. The monitor
      // only for checking the transaction again; the cancel outside it, so the owner's rollback
      // and close never wait for a driver's cancel (review L1). A cancel must never reach a
      // statement of the next transaction: the owner's next statement waits for it (awaitCancel).
      options
          .cancelExecutor()
          .execute(
              () -> {
                if (mine != null) {
                  synchronized (this) {
                    if (txn != mine || mine.running != s) {
                      return;
                    }
                    cancelling = s;
                  }
                  try {
                    cancel(s, lease);
                  } finally {
                    synchronized (this) {
                      cancelling = null;
                      notifyAll();
                    }
                  }
                } else {
                  cancel(s, lease); // weakened: the first release's unconditional cancel
                }
              });
    }
  }

  /**
   * A statement about to run waits for a lost lease's cancel still in flight: the driver cancels
   * whatever the connection runs when the cancel arrives.
   */
  private void awaitCancel() {
    boolean interrupted = false;
    synchronized (this) {
      while (cancelling != null) {
        try {
          wait();
        } catch (InterruptedException e) {
          interrupted = true; // the loss interrupts the worker: wait on, bounded by the cancel
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private static void cancel(Statement s, Lease lease) {
    try {
      s.cancel();
    } catch (SQLException | RuntimeException e) {
      log.debug("could not cancel a statement under lost {}", lease, e);
    }
  }

  /**
   * Whether {@code e} is the server's refusal of a verify ({@code Dialect.isRefusal}: this
   * process's marker text and the refusal's own SQLState), not an application statement's error
   * that merely echoes the marker from user data.
   */
  private boolean refusedInServer(SQLException e) {
    if (options.weakened(Weakening.REFUSAL_BY_MARKER_TEXT)) {
      return Weakening.mentionsMarker(e);
    }
    return LeaseInternals.isRefusal(e);
  }

  /**
   * The one place where the database's refusal of a verify becomes {@value
   * LeaseLostSQLException#REFUSED}: the server's error ({@code cause}; null when a verify returned
   * no row instead) is kept as the cause, the transaction is poisoned, listeners are told.
   */
  private LeaseLostSQLException refusedByDatabase(Lease lease, SQLException cause) {
    String why = "the database says it is no longer held by this holder at this term";
    // poisoned before the loss is reported: the lease's loss listener (on the loss executor, which
    // may run before this thread goes on) then finds it poisoned and does not report it again
    boolean first = markRefused(lease, why);
    boolean lostHere = false;
    if (!options.weakened(Weakening.REFUSAL_NOT_REPORTED)) {
      boolean lostBefore = lease.lossReason().isPresent();
      LeaseInternals.lostInDatabase(lease); // lost at once; later transactions refused locally
      lostHere = !lostBefore && lease.lossReason().orElse(null) == LossReason.DATABASE;
    }
    // lostHere: lease-core has just logged this refusal at WARN ("lost lease ...: the database
    // refused a fenced transaction"), so this line is the second for one refused transaction
    return refused(lease, why, cause, first && !lostHere);
  }

  private LeaseLostSQLException refuse(Lease lease, String why) {
    return refuse(lease, why, null);
  }

  private LeaseLostSQLException refuse(Lease lease, String why, SQLException cause) {
    return refused(lease, why, cause, markRefused(lease, why));
  }

  /** Poisons the transaction under {@code lease} as refused; false if it already was poisoned. */
  private boolean markRefused(Lease lease, String why) {
    FencedTransaction t = transaction(lease);
    synchronized (this) {
      boolean first = !t.poisoned;
      t.poisoned = true;
      t.poisonReason = "it was refused under " + lease + ": " + why;
      return first;
    }
  }

  /**
   * Reports a refusal (listeners always: they count refusals) and makes its exception. Logged at
   * WARN once per transaction ({@code warn}); at DEBUG when the transaction's refusal or poisoning
   * was already logged at WARN, so one refused transaction is one WARN line.
   */
  private LeaseLostSQLException refused(Lease lease, String why, SQLException cause, boolean warn) {
    // term 0 is a placeholder for a lease never claimed here (as in the exception below): no term
    String term = lease.term() == 0 ? "" : " term " + lease.term();
    if (warn) {
      log.warn(
          "refused a transaction under lease {}{} instance {}: {}",
          lease.name(),
          term,
          lease.instance(),
          why);
    } else {
      log.debug(
          "refused a transaction under lease {}{} instance {}: {} (reported above)",
          lease.name(),
          term,
          lease.instance(),
          why);
    }
    notify(lease, l -> l.transactionRefused(lease));
    return new LeaseLostSQLException(
        "transaction refused: lease "
            + lease.name()
            + term
            + " (instance "
            + lease.instance()
            + "): "
            + why
            + "; roll back",
        LeaseLostSQLException.REFUSED,
        lease,
        cause);
  }

  /** Poisons the open transaction under {@code lease} (owner thread). */
  private void poison(Lease lease, String why) {
    FencedTransaction t = transaction(lease);
    boolean now;
    synchronized (this) {
      now = poisonLocked(t, why);
    }
    if (now) {
      poisoned(lease, why);
    }
  }

  /** Marks {@code t} poisoned; false if it already was. Under the monitor. */
  private boolean poisonLocked(FencedTransaction t, String why) {
    if (t.poisoned) {
      return false;
    }
    t.poisonReason = "lease " + t.lease.name() + " term " + t.lease.term() + ": " + why;
    t.poisoned = true;
    return true;
  }

  private void poisoned(Lease lease, String why) {
    log.warn(
        "poisoned a transaction under lease {} term {} instance {}: {}",
        lease.name(),
        lease.term(),
        lease.instance(),
        why);
    notify(lease, l -> l.transactionPoisoned(lease));
  }

  private LeaseLostSQLException leaseChanged(Lease lease) {
    Lease was = verified();
    poison(was, "the thread's lease changed to " + lease + " inside the transaction");
    return new LeaseLostSQLException(
        "the transaction was verified under "
            + was
            + " but "
            + (lease == null ? "no lease" : lease.toString())
            + " is bound now; bind one lease for the"
            + " whole transaction, and roll back",
        LeaseLostSQLException.LEASE_CHANGED,
        was,
        null);
  }

  private LeaseLostSQLException mixed(Lease lease, long summary, int source) {
    String what = source == BATCH ? "a batch" : "a SQL text";
    String why =
        SqlSummary.ambiguous(summary)
            ? what
                + " whose statements cannot be told apart without knowing the server's settings"
                + " (MySQL versioned comments of different versions)"
            : what
                + " with "
                + SqlSummary.describe(summary)
                + ": transaction control must be a statement of its own";
    return new LeaseLostSQLException(
        "refused under "
            + lease
            + " before anything was sent: "
            + why
            + "; send each transaction-control statement alone (or use setAutoCommit, commit and"
            + " rollback), or run the text without a lease bound",
        LeaseLostSQLException.TRANSACTION_CONTROL_MIXED,
        lease,
        null);
  }

  private static LeaseLostSQLException autoCommitRefused(Lease lease) {
    return new LeaseLostSQLException(
        "refused an autocommit statement under "
            + lease
            + ": with AutoCommitPolicy.REFUSE, run it in a transaction (setAutoCommit(false))",
        LeaseLostSQLException.AUTOCOMMIT_REFUSED,
        lease,
        null);
  }

  /**
   * Everything a commit needs, whatever writes it (commit(), setAutoCommit(true), COMMIT or END as
   * SQL, MySQL's implicit commits, SET autocommit = 1, SQLite's RELEASE): not poisoned, the lock
   * taken again if an error or a savepoint rollback may have freed it, and in VERIFY mode not
   * released since the verify.
   */
  private void checkCommit(Lease lease) throws SQLException {
    checkNotPoisoned();
    if (options.weakened(Weakening.NO_COMMIT_CHECKS)) {
      return;
    }
    if (endedBehindTheFence()) {
      reverify = true;
    }
    if (reverify && verified() != null && lease == verified()) {
      verifyAgain(lease);
    }
    checkStillHeld();
  }

  /**
   * VERIFY mode only: a release sets the row's expiry to now, so the margin between the local
   * deadline and the expiry that VERIFY relies on is gone at once and a successor may already hold
   * the lease; nothing in the database orders this commit before its claim (STRICT's row lock
   * does), so the commit is refused. A loss poisons the transaction through its loss listener. The
   * local deadline is deliberately not re-checked here: that would only narrow VERIFY's documented
   * gap (a pause between the check and the commit), not close it.
   */
  private void checkStillHeld() throws LeaseLostSQLException {
    Lease lease = verified();
    if (lease != null
        && lease.isLost()
        && !options.weakened(Weakening.COMMIT_TRUSTS_LOSS_LISTENER)) {
      // the loss listener that poisons this transaction runs later, on the loss executor: the
      // lease's own state decides a commit that comes first
      poison(lease, "its lease was lost while it was open");
      throw poisonedException(null);
    }
    if (!strict && lease != null && lease.isReleased()) {
      throw refuse(
          lease,
          "it was released after this transaction was verified, and VERIFY mode"
              + " cannot order this commit before a successor's claim");
    }
  }

  private void checkNotPoisoned() throws LeaseLostSQLException {
    if (poisoned()) {
      throw poisonedException(null);
    }
  }

  private LeaseLostSQLException poisonedException(String more) {
    return poisonedException(more, null);
  }

  private LeaseLostSQLException poisonedException(String more, Throwable cause) {
    FencedTransaction t = txn;
    return new LeaseLostSQLException(
        "transaction poisoned ("
            + (t == null ? "its lease was lost" : t.poisonReason)
            + ")"
            + (more == null ? "" : "; " + more)
            + "; roll it back",
        LeaseLostSQLException.POISONED,
        t == null ? null : t.lease,
        cause);
  }

  private void endTransaction() {
    FencedTransaction t;
    synchronized (this) {
      t = txn;
      txn = null;
    }
    reverify = false;
    flags &= ~FENCED;
    if (t != null && t.registration != null) {
      t.registration.close();
    }
  }

  private void notify(Lease lease, Consumer<LeaseListener> event) {
    LeaseListener own = options.listener();
    if (own != null) {
      try {
        event.accept(own);
      } catch (RuntimeException e) {
        log.warn("fencing listener {} failed", own, e);
      }
    }
    LeaseInternals.notifyListeners(lease.manager(), event);
  }
}
