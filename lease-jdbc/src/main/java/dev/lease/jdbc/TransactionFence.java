package dev.lease.jdbc;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.internal.sql.SqlDialect;
import dev.lease.jdbc.internal.sql.SqlKind;
import dev.lease.jdbc.internal.sql.SqlLexer;
import dev.lease.jdbc.internal.sql.SqlStatement;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.EnumSet;
import java.util.List;
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
 *       sent with it or after it runs; {@link Losses#refusedByDatabase} turns its error into LF001.
 *       <b>Every commit carries its proof</b> ({@link #commit}): on PostgreSQL the verify rides in
 *       the COMMIT's round trip; elsewhere it runs before the COMMIT when the fence's picture is in
 *       doubt, including when the driver says the verified transaction ended behind the fence
 *       ({@link Verifier#endedBehindTheFence}). The mechanism is a {@link Refusal}; DESIGN-NOTE.md.
 *   <li><b>Where the transaction is</b> is asked of the driver, not assumed ({@link
 *       DriverSession}): a BEGIN sent as SQL before the lease was bound, {@code SET autocommit} as
 *       SQL, a deadlock that rolled the transaction back. With a driver that cannot tell, the fence
 *       assumes only what is safe: no transaction is open unless it saw one begin.
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
 * This class holds the rules and the transaction's state; the mechanisms are its collaborators,
 * each a package-private class that reads and moves that state: {@link Verifier} (the verify and
 * the commit's proof), {@link Piggyback} (the verify in the first statement's round trip), {@link
 * AutoCommitStatements}, {@link Losses} (loss, refusal, poison and the fence's exceptions). They
 * log under this class's name.
 *
 * <p>Connections are used by one thread at a time; only the loss listener touches this from another
 * thread, through the volatile fields and under the fence's monitor (this object).
 */
final class TransactionFence {

  private static final Logger log = LoggerFactory.getLogger(TransactionFence.class);

  // ---- owner-thread state bits: 0 means "nothing to do for a statement with no lease bound"

  /** A fenced transaction is open: verified, refused or poisoned ({@link #txn} is set). */
  static final int FENCED = 1;

  /** A transaction begun as SQL while autocommit is on ({@link #sqlTransaction}). */
  static final int SQL_TRANSACTION = 1 << 2;

  /**
   * An autocommit query's transaction stays open until its result set is done ({@link
   * AutoCommitStatements#pending}).
   */
  static final int PENDING = 1 << 3;

  /** MySQL session bounds may have to be restored before a statement with no lease. */
  static final int SESSION_CHECK = 1 << 4;

  /** How the connection stands when a lease-bound transaction starts. */
  enum Mode {
    /** Autocommit: each statement commits on its own. */
    AUTOCOMMIT,
    /** {@code setAutoCommit(false)}: the driver keeps a transaction open. */
    JDBC,
    /** Autocommit on, but a transaction begun as SQL (BEGIN) is open. */
    SQL
  }

  final Connection delegate;
  final FencingOptions options;
  final boolean strict;

  int flags;

  /**
   * The open fenced transaction, null when none is: one object per transaction, so its identity is
   * its generation (a loss registered for one never reaches the next).
   */
  volatile FencedTransaction txn;

  /** The verify's lock may be gone (error, savepoint rollback, CALL): verify again before use. */
  boolean reverify;

  /** A transaction begun as SQL that the fence saw begin (for drivers that cannot tell). */
  boolean sqlTransaction;

  SqlLexer lexer;
  DriverSession session;

  final Losses losses = new Losses(this);
  final Verifier verifier = new Verifier(this);
  final Piggyback piggyback = new Piggyback(this);
  final AutoCommitStatements autoCommits = new AutoCommitStatements(this);

  /** First statements that carried the verify along and ran (tests count them). */
  int piggybacked() {
    return piggyback.piggybacked;
  }

  /** {@link Piggyback#mayPiggyback}. */
  boolean mayPiggyback() {
    return piggyback.mayPiggyback();
  }

  /** A result set of {@code st} (or the statement itself) closed: its query is done. */
  void resultDone(FencingStatement st) throws SQLException {
    autoCommits.resultDone(st);
  }

  /** The driver's options were checked for silent reconnects and replays. */
  boolean driverChecked;

  /** A statement failed before {@link #session} was looked up: its flags start out stale. */
  boolean failedBeforeSession;

  /** What may end a refused transaction, and the XA branch begun as SQL (issue 25 item 8). */
  final Abandoning abandoning = new Abandoning();

  /** The lease the open transaction was verified under; null when none was. */
  Lease verified() {
    FencedTransaction t = txn;
    return t != null && t.confirmed ? t.lease : null;
  }

  boolean poisoned() {
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
    return flags == 0 && losses.cancelling == null && LeaseInternals.currentOrNull() == null;
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

  /**
   * Runs a statement (or an updatable result set's row change) under the fencing rules.
   *
   * @param st the fenced statement, or null for a row change of a result set without one
   * @param sql the text of {@code execute(String)} and friends; null otherwise
   */
  <T> T execute(FencingStatement st, StatementSource source, String sql, SqlCall<T> call)
      throws SQLException {
    return execute(st, source, sql, call, CallShape.NONE);
  }

  /**
   * Like {@link #execute(FencingStatement, StatementSource, String, SqlCall)}, for a call whose
   * result the fence can present itself when the statement carried the verify along ({@code
   * shape}).
   */
  <T> T execute(
      FencingStatement st, StatementSource source, String sql, SqlCall<T> call, CallShape shape)
      throws SQLException {
    if (losses.cancelling != null) {
      losses.awaitCancel();
    }
    autoCommits.finishPending();
    Lease lease = LeaseInternals.currentOrNull();
    if (lease == null) {
      return unleased(st, source, sql, call);
    }
    SqlSummary summary = summary(st, source, sql, lexer(lease));
    int count = summary.count();
    SqlKind kind = count == 1 ? summary.single() : SqlKind.OTHER;
    FencedTransaction open = txn;
    Lease owner = open == null ? null : open.lease;
    if (owner != null && lease != owner && abandoned()) {
      rollbackAbandoned(lease);
    }
    if (poisoned()) {
      if (count == 1 && kind.isRollback()) {
        return xaControl(lease, st, kind, summary, call, text(st, source, sql));
      }
      int abandon = abandons(summary, st, source, sql);
      if (abandon != Abandoning.NONE) {
        return abandon(abandon, call, text(st, source, sql));
      }
      throw losses.poisonedException(null);
    }
    if (verified() != null && lease != verified()) {
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
          inDoubt();
        }
      }
      return ordinary(lease, st, call, count == 1 ? shape : CallShape.NONE, source, sql);
    }
    if (kind == SqlKind.PREPARE_TRANSACTION
        && isMySql()
        && strict
        && !options.weakened(Weakening.NO_COMMIT_CHECKS)
        && isXaPrepare(st, source, sql)) {
      throw Losses.xaPrepareRefused(lease);
    }
    if (kind == SqlKind.IMPLICIT_COMMIT
        && isMySql()
        && !options.weakened(Weakening.LOCK_TABLES_UNCHECKED)) {
      String text = text(st, source, sql);
      if (text != null && LockTables.leavesOut(text, lease.manager().table())) {
        throw Losses.lockTablesRefused(lease);
      }
    }
    return xaControl(lease, st, kind, summary, call, text(st, source, sql));
  }

  /**
   * {@link #control}, and on MySQL/MariaDB the XA branch begun as SQL remembered ({@link
   * Abandoning#observe}): its XA ROLLBACK or XA COMMIT ends the session's transaction.
   */
  <T> T xaControl(
      Lease lease,
      FencingStatement st,
      SqlKind kind,
      SqlSummary summary,
      SqlCall<T> call,
      String text)
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
        throw losses.refuse(lease, "it is no longer held by this process");
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
  <T> T unlockTables(Lease lease, Mode mode, SqlCall<T> call) throws SQLException {
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
  int abandons(SqlSummary summary, FencingStatement st, StatementSource source, String sql) {
    if (summary.count() != 1 || summary.ambiguous() || lexer == null) {
      return Abandoning.NONE;
    }
    return Abandoning.of(lexer, text(st, source, sql));
  }

  /** A statement that only ends or abandons a refused transaction: it runs (issue 25 item 8). */
  <T> T abandon(int what, SqlCall<T> call, String text) throws SQLException {
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
  void inDoubt() {
    if (verified() != null && !options.weakened(Weakening.NO_REVERIFY)) {
      reverify = true;
    }
  }

  boolean isXaPrepare(FencingStatement st, StatementSource source, String sql) {
    String text = text(st, source, sql);
    if (text == null) {
      return false;
    }
    List<String> w = Abandoning.words(lexer, text, 2);
    return w.size() >= 2 && w.get(0).equals("XA") && w.get(1).equals("PREPARE");
  }

  static String text(FencingStatement st, StatementSource source, String sql) {
    return source == StatementSource.TEXT ? sql : st == null ? null : st.sql;
  }

  /** No lease bound: pass through, after cleaning up what a lease-bound user left. */
  <T> T unleased(FencingStatement st, StatementSource source, String sql, SqlCall<T> call)
      throws SQLException {
    if ((flags & SESSION_CHECK) != 0) {
      flags &= ~SESSION_CHECK;
      SessionBounds.restore(delegate);
    }
    if (verified() != null || poisoned()) {
      if (abandoned()) {
        rollbackAbandoned(null);
      } else {
        SqlSummary summary = summary(st, source, sql, lexer(null));
        SqlKind kind = summary.count() == 1 ? summary.single() : SqlKind.OTHER;
        int abandon = abandons(summary, st, source, sql);
        if (abandon != Abandoning.NONE) {
          return abandon(abandon, call, text(st, source, sql));
        }
        if (kind.isRollback()) {
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
          throw losses.poisonedException(null);
        }
        throw losses.leaseChanged(null);
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
  <T> T ordinary(Lease lease, FencingStatement st, SqlCall<T> call) throws SQLException {
    return ordinary(lease, st, call, CallShape.NONE, StatementSource.TEXT, null);
  }

  /**
   * An ordinary statement: runs in a verified transaction; the first of a transaction begun with
   * {@code setAutoCommit(false)} carries the verify along where it can ({@link #piggyback}).
   */
  <T> T ordinary(
      Lease lease,
      FencingStatement st,
      SqlCall<T> call,
      CallShape shape,
      StatementSource source,
      String sql)
      throws SQLException {
    if (verified() == lease) {
      if (!reverify && verifier.endedBehindTheFence()) {
        reverify = true; // an implicit commit, a COMMIT through a driver object: verify anew
      }
      if (reverify) {
        // MySQL family: a CALL/EXECUTE may have run SET autocommit = 1 behind Connector/J's cached
        // flag (review S7): mode() asks the server before the cached flag is trusted
        if ((isMySql() || delegate.getAutoCommit()) && mode() == Mode.AUTOCOMMIT) {
          // the error ended the transaction begun as SQL (a deadlock, SQLite's ON CONFLICT
          // ROLLBACK): the statement is an autocommit statement now
          endTransaction();
          return autoCommits.autoCommitStatement(lease, st, SqlKind.OTHER, call);
        }
        verifier.verifyAgain(lease);
      }
      return run(st, call);
    }
    if (lease.isLost()) {
      // known lost (the database refused it, or its deadline passed): refused here, before any
      // round trip — not even the MySQL flag refresh that mode() may send after the refusal's error
      verifier.verify(lease);
    }
    switch (mode()) {
      case JDBC:
        if (shape != CallShape.NONE && piggyback.piggybackable(lease, st, source, sql, shape)) {
          return piggyback.piggyback(lease, st, source, sql, shape);
        }
        ensureSqliteTransaction();
        verifier.verify(lease);
        return run(st, call);
      case SQL:
        verifier.verify(lease);
        if (Boolean.FALSE.equals(driverSession().inTransaction())) {
          // the driver's flags were stale: the verify ran in autocommit, no transaction is open
          endTransaction();
          markSqlTransaction(false);
          return autoCommits.autoCommitStatement(lease, st, SqlKind.OTHER, call);
        }
        return run(st, call);
      default:
        return autoCommits.autoCommitStatement(lease, st, SqlKind.OTHER, call);
    }
  }

  /** A text holding one transaction-control statement of {@code kind}. */
  <T> T control(Lease lease, FencingStatement st, SqlKind kind, SqlSummary summary, SqlCall<T> call)
      throws SQLException {
    switch (kind) {
      case BEGIN:
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
      case COMMIT:
      case PREPARE_TRANSACTION:
        checkCommit(lease);
        if (verified() != null && verifier.ridesInCommit(verified())) {
          // PostgreSQL: every commit carries its proof; the user's own COMMIT text cannot carry
          // it, so it runs just before, as commit() would send it
          verifier.proveCommit(verified(), false);
        }
        try {
          return runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case ROLLBACK:
        try {
          return runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case ROLLBACK_TO:
        {
          T result = runUnverified(call);
          if (verified() != null) {
            reverify = true; // PostgreSQL frees row locks taken after the savepoint
          }
          return result;
        }
      case ROLLBACK_PREPARED:
      case SET_TRANSACTION:
        return runUnverified(call); // writes nothing; must run before the transaction's verify
      case SAVEPOINT:
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
      case RELEASE:
        if (lexer.dialect != SqlDialect.SQLITE) {
          return runUnverified(call);
        }
        checkCommit(lease); // SQLite commits when the outermost savepoint is released
        try {
          return runUnverified(call);
        } finally {
          transactionEndedAsSql(summary);
        }
      case SET_AUTOCOMMIT:
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
      case IMPLICIT_COMMIT:
      case NON_TRANSACTIONAL:
      case COMMIT_PREPARED:
        return outsideTransaction(lease, st, kind, call);
      case ROUTINE:
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
  void transactionEndedAsSql(SqlSummary summary) throws SQLException {
    endTransaction();
    boolean autoCommit = delegate.getAutoCommit();
    markSqlTransaction(summary.chain() && autoCommit);
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
  <T> T outsideTransaction(Lease lease, FencingStatement st, SqlKind kind, SqlCall<T> call)
      throws SQLException {
    Mode mode = mode();
    if (mode == Mode.AUTOCOMMIT) {
      if (options.autoCommit() == AutoCommitPolicy.REFUSE) {
        throw Losses.autoCommitRefused(lease);
      }
      try {
        verifier.verify(lease);
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
      verifier.verifyAgain(lease);
    } else {
      ensureSqliteTransaction();
      verifier.verify(lease);
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
  <T> T routine(Lease lease, FencingStatement st, SqlCall<T> call) throws SQLException {
    Mode mode = mode();
    if (mode == Mode.AUTOCOMMIT) {
      return autoCommits.autoCommitStatement(lease, st, SqlKind.ROUTINE, call);
    }
    if (verified() == lease) {
      verifier.verifyAgain(lease);
    } else {
      ensureSqliteTransaction();
      verifier.verify(lease);
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
    autoCommits.finishPending();
    Lease lease = LeaseInternals.currentOrNull();
    checkNotPoisoned();
    if (lease == null) {
      return;
    }
    if (verified() != null) {
      if (lease != verified()) {
        if (!abandoned()) {
          throw losses.leaseChanged(lease);
        }
        rollbackAbandoned(lease);
      } else {
        if (reverify) {
          verifier.verifyAgain(lease);
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
      throw Losses.autoCommitRefused(lease);
    }
    try {
      verifier.verify(lease); // refuses a lease no longer held
    } finally {
      endTransaction();
    }
  }

  void verifyIfNeeded(Lease lease, Mode mode) throws SQLException {
    if (verified() == lease) {
      if (reverify) {
        verifier.verifyAgain(lease);
      }
      return;
    }
    if (mode == Mode.JDBC) {
      ensureSqliteTransaction();
    }
    verifier.verify(lease);
  }

  // ---- connection calls
  // ---------------------------------------------------------------------------

  void commit() throws SQLException {
    autoCommits.finishPending();
    checkNotPoisoned();
    Lease lease = LeaseInternals.currentOrNull();
    if (verified() != null && lease != verified() && abandoned()) {
      rollbackAbandoned(lease);
    }
    Lease proof = verifier.proofLease(lease);
    if (proof != null && proof == verified() && verifier.endedBehindTheFence()) {
      reverify = true;
    }
    boolean rides = verifier.ridesInCommit(proof);
    if (reverify && verified() != null && !rides) {
      verifier.verifyAgain(verified());
    }
    checkStillHeld();
    try {
      if (rides) {
        verifier.commitWithVerify(proof);
      } else {
        if (proof != null && proof != verified() && options.refusal().commitCarriesProof()) {
          verifier.verify(proof); // writes the fence did not see (a driver object): prove them now
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
        LeaseLostSQLException lost = losses.lostDuring(e);
        if (lost != null) {
          throw lost;
        }
      }
      throw e;
    } finally {
      endTransaction();
    }
  }

  /** Never fails because of a lease. */
  void rollback() throws SQLException {
    // an autocommit statement completes; the driver then refuses rollback()
    autoCommits.finishPending();
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
  static final java.util.Set<String> SESSION_GONE = java.util.Set.of("08003", "25P03");

  /** True if {@code t} is under a lease that was lost or whose local deadline passed. */
  static boolean notHeld(FencedTransaction t) {
    Lease lease = t == null ? null : t.lease;
    return lease != null && !lease.isReleased() && !lease.isHeld();
  }

  boolean closedQuietly() {
    try {
      return delegate.isClosed();
    } catch (SQLException e) {
      return false;
    }
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
    autoCommits.finishPending();
    boolean was = delegate.getAutoCommit();
    if (autoCommit == was) {
      delegate.setAutoCommit(autoCommit);
      return;
    }
    if (autoCommit && poisoned()) {
      LeaseLostSQLException refused =
          losses.poisonedException(
              "setAutoCommit(true) would commit it; it was rolled back instead");
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
      Lease proof = verifier.proofLease(LeaseInternals.currentOrNull());
      if (proof != null && verifier.ridesInCommit(proof)) {
        checkStillHeld();
        verifier.commitWithVerify(proof); // the driver then finds nothing open to commit
      } else if (proof != null && proof == verified()) {
        checkCommit(proof);
      } else if (proof != null) {
        verifier.verify(proof); // writes the fence did not see: prove them before they commit
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
    return autoCommits.pending != null || delegate.getAutoCommit();
  }

  /** Before {@code setTransactionIsolation}, {@code setReadOnly} and the like. */
  void beforeSessionChange() throws SQLException {
    autoCommits.finishPending();
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
    autoCommits.pending = null;
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
    autoCommits.finishPendingQuietly();
    // also a transaction the fence never verified that the server has open under the bound lease
    // (writes through a driver object): the next borrower must not commit it
    if ((poisoned() || verified() != null || verifier.unprovenUnderLease())
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

  // ---- where the transaction is
  // -------------------------------------------------------------------

  /**
   * How the connection stands for a new lease-bound transaction, from the driver where it can tell:
   * a transaction begun as SQL before the lease was bound is found, and MySQL Connector/J's cached
   * autocommit is brought in line with the server first.
   */
  Mode mode() throws SQLException {
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
  void syncAutoCommit() throws SQLException {
    DriverSession s = driverSession();
    Boolean server = s.serverAutoCommit();
    if (server != null && server != delegate.getAutoCommit()) {
      log.debug("SET autocommit ran as SQL; telling the driver autocommit is {}", server);
      delegate.setAutoCommit(server);
    }
  }

  void markSqlTransaction(boolean open) {
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
  void ensureSqliteTransaction() throws SQLException {
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

  DriverSession driverSession() {
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

  boolean isMySql() {
    return lexer.dialect == SqlDialect.MYSQL;
  }

  // ---- reading the text
  // ---------------------------------------------------------------------------

  /** The lexer of this connection's database: the lease's, else the connection's metadata. */
  SqlLexer lexer(Lease lease) throws SQLException {
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

  SqlSummary summary(FencingStatement st, StatementSource source, String sql, SqlLexer lexer) {
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
    if (options.weakened(Weakening.LEADING_KEYWORD)) {
      return leadingKeywordOnly(st, source, sql, lexer);
    }
    if (options.weakened(Weakening.UNKNOWN_IMPLICIT_COMMITS) && s.has(SqlKind.IMPLICIT_COMMIT)) {
      EnumSet<SqlKind> kinds = EnumSet.copyOf(s.kinds());
      kinds.remove(SqlKind.IMPLICIT_COMMIT);
      kinds.add(SqlKind.OTHER);
      SqlKind single = s.single() == SqlKind.IMPLICIT_COMMIT ? SqlKind.OTHER : s.single();
      return SqlSummary.of(kinds, s.count(), single, s.ambiguous(), s.chain());
    }
    return s;
  }

  /** The first release's reading, for negative controls: the first statement's kind only. */
  static SqlSummary leadingKeywordOnly(
      FencingStatement st, StatementSource source, String sql, SqlLexer lexer) {
    String text = source == StatementSource.TEXT ? sql : st == null ? null : st.sql;
    List<SqlStatement> all = text == null ? List.of() : lexer.statements(text);
    return SqlSummary.one(all.isEmpty() ? SqlKind.OTHER : all.get(0).kind());
  }

  // ---- running statements
  // -------------------------------------------------------------------------

  <T> T run(FencingStatement st, SqlCall<T> call) throws SQLException {
    FencedTransaction t = txn;
    if (t != null) {
      t.running = st == null ? null : st.delegate;
    }
    try {
      return call.call();
    } catch (SQLException e) {
      afterError();
      if (t != null && losses.refusedInServer(e)) {
        // a verify the driver sent again on its own (MariaDB transactionReplay) was refused
        throw losses.refusedByDatabase(t.lease, e);
      }
      if (poisoned()) {
        // the lease was lost while the statement ran and the loss cancelled it
        throw losses.poisonedException("its statement failed after the loss: " + e.getMessage(), e);
      }
      LeaseLostSQLException lost = losses.lostDuring(e);
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
  <T> T runUnverified(SqlCall<T> call) throws SQLException {
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
  void afterError() {
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
  boolean abandoned() {
    FencedTransaction t = txn;
    return t != null
        && t.by != Thread.currentThread()
        && !options.weakened(Weakening.NO_ABANDON_CHECK);
  }

  void rollbackAbandoned(Lease now) throws SQLException {
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
  void rollbackOpenTransaction() throws SQLException {
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

  // ---- the checks of a commit
  // ---------------------------------------------------------------------

  /**
   * Everything a commit needs, whatever writes it (commit(), setAutoCommit(true), COMMIT or END as
   * SQL, MySQL's implicit commits, SET autocommit = 1, SQLite's RELEASE): not poisoned, the lock
   * taken again if an error or a savepoint rollback may have freed it, and in VERIFY mode not
   * released since the verify.
   */
  void checkCommit(Lease lease) throws SQLException {
    checkNotPoisoned();
    if (options.weakened(Weakening.NO_COMMIT_CHECKS)) {
      return;
    }
    if (verifier.endedBehindTheFence()) {
      reverify = true;
    }
    if (reverify && verified() != null && lease == verified()) {
      verifier.verifyAgain(lease);
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
  void checkStillHeld() throws LeaseLostSQLException {
    Lease lease = verified();
    if (lease != null
        && lease.isLost()
        && !options.weakened(Weakening.COMMIT_TRUSTS_LOSS_LISTENER)) {
      // the loss listener that poisons this transaction runs later, on the loss executor: the
      // lease's own state decides a commit that comes first
      losses.poison(lease, "its lease was lost while it was open");
      throw losses.poisonedException(null);
    }
    if (!strict && lease != null && lease.isReleased()) {
      throw losses.refuse(
          lease,
          "it was released after this transaction was verified, and VERIFY mode"
              + " cannot order this commit before a successor's claim");
    }
  }

  void checkNotPoisoned() throws LeaseLostSQLException {
    if (poisoned()) {
      throw losses.poisonedException(null);
    }
  }

  /** The open fenced transaction under {@code lease}; a new one if none is (owner thread). */
  FencedTransaction transaction(Lease lease) {
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

  void endTransaction() {
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
}
