package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.ReadOnlyPolicy;
import dev.lease.jdbc.internal.sql.SqlDialect;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link TransactionFence} proves its lease to the database: the verify at the start of a
 * transaction, by its {@link VerifyStrategy} ({@link VerifyStrategy#STRICT}: with the lease row's
 * share lock, held to the commit; {@link VerifyStrategy#VERIFY}: a plain read), again after
 * anything that may have taken its lock away, and the proof every commit carries ({@link
 * #proveCommit}; DESIGN-NOTE.md section 3). Session bounds a STRICT verify sets on MySQL/MariaDB,
 * and read-only transactions (which cannot take the lock) are handled here too.
 */
final class Verifier {

  private static final Logger log = LoggerFactory.getLogger(FenceContext.LOGGER);

  private final FenceContext f;
  private final Losses losses;
  private final SessionView view;
  private final StatementReader reader;

  Verifier(FenceContext f, Losses losses, SessionView view, StatementReader reader) {
    this.f = f;
    this.losses = losses;
    this.view = view;
    this.reader = reader;
  }

  Duration idleBound(Lease lease) {
    return f.options.idleInTransactionTimeout() != null
        ? f.options.idleInTransactionTimeout()
        : lease.manager().timings().leaseDuration();
  }

  /** STRICT on MySQL/MariaDB: the lock wait the session is given ({@link #applySessionBounds}). */
  Duration lockWaitBound(Lease lease) {
    return f.options.lockWaitTimeout() != null
        ? f.options.lockWaitTimeout()
        : lease.manager().timings().leaseDuration();
  }

  /** Verifies again in the open transaction (its lock may be gone); stays verified. */
  void verifyAgain(Lease lease) throws SQLException {
    if (!f.delegate.getAutoCommit()) {
      view.ensureSqliteTransaction(); // an error may have rolled SQLite's transaction back
    }
    f.state.reverify = false;
    FencedTransaction t = f.state.txn;
    if (t != null) {
      t.confirmed = false; // until the database confirms it again
    }
    verify(lease);
  }

  /** MySQL/MariaDB 1100: "Table '...' was not locked with LOCK TABLES". */
  static final int ER_TABLE_NOT_LOCKED = 1100;

  /**
   * MySQL/MariaDB 1747: "PARTITION () clause on non partitioned table": the verify's reference
   * ({@code PARTITION (p0)}) met a temporary table of the lease table's name (issue 35 item 1).
   */
  static final int ER_PARTITION_CLAUSE_ON_NONPARTITIONED = 1747;

  void verify(Lease lease) throws SQLException {
    if (f.options.readOnly() == ReadOnlyPolicy.SKIP && readOnlyWithoutLocks(lease)) {
      markVerified(lease); // nothing to verify; later statements still check the bound lease
      return;
    }
    if (!lease.isHeld()) {
      throw losses.refuse(
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
        f.options.idleInTransactionTimeout() != null
            ? f.options.idleInTransactionTimeout()
            : lease.manager().timings().leaseDuration();
    if ("SQLite".equals(lease.manager().databaseProduct())) {
      awaitRenewal(lease);
    }
    boolean lock = f.strategy.locks() && !readOnlyWithoutLocks(lease);
    // MySQL/MariaDB STRICT: the verify reads the session's bounds along (other databases: none)
    long[] session =
        lock && f.lexer != null && f.lexer.dialect == SqlDialect.MYSQL ? new long[] {-1, -1} : null;
    boolean held;
    try {
      held =
          LeaseInternals.verifyInTransaction(
              lease, f.delegate, f.rules.verifySql(lease, lock), lock, idle, session);
      if (held && session != null && session[0] >= 0) {
        applySessionBounds(lease, session, idle);
      }
    } catch (SQLException e) {
      // the transaction may be half-aborted (PostgreSQL) or still open (MySQL lock wait timeout):
      // poison it so nothing commits, and give the caller the database's own error
      view.driverSession().failed();
      if (losses.refusedInServer(e)) {
        throw losses.refusedByDatabase(lease, e);
      }
      losses.poison(
          lease,
          "its verify failed: " + e.getMessage(),
          LeaseLostSQLException.Reason.VERIFY_FAILED);
      if (f.isMySql() && e.getErrorCode() == ER_TABLE_NOT_LOCKED) {
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
      if (f.isMySql() && e.getErrorCode() == ER_PARTITION_CLAUSE_ON_NONPARTITIONED) {
        throw new SQLException(
            "the verify of "
                + lease
                + " cannot reach the lease table "
                + lease.manager().table()
                + ": this session has a temporary table of that name, which shadows it (MySQL and"
                + " MariaDB resolve a name to the session's temporary table first); the verify"
                + " names the table's partition, so the temporary one fails it instead of standing"
                + " in for it. Drop the temporary table (DROP TEMPORARY TABLE "
                + lease.manager().table()
                + ") or give it another name; the transaction was refused",
            e.getSQLState(),
            e.getErrorCode(),
            e);
      }
      throw e;
    }
    if (!held) {
      throw losses.refusedByDatabase(lease, null);
    }
    markVerified(lease);
    losses.notify(lease, l -> l.transactionVerified(lease));
  }

  void markVerified(Lease lease) {
    FencedTransaction t = f.state.transaction(lease);
    t.confirmed = true;
    if (t.registration == null) {
      // the listener knows its transaction: a loss never reaches the next one
      FencedTransaction mine = f.rules.tiesLossToItsTransaction() ? t : null;
      t.registration = lease.onLoss(l -> losses.leaseLost(l, mine));
    }
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
  boolean readOnlyWithoutLocks(Lease lease) throws SQLException {
    String product = lease.manager().databaseProduct();
    if ("SQLite".equals(product) || !f.rules.asksServerWhetherReadOnly()) {
      return f.delegate.isReadOnly();
    }
    if (!"PostgreSQL".equals(product) || !(f.delegate.isReadOnly() || readOnlyByDefault())) {
      return false;
    }
    try (Statement s = f.delegate.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('transaction_read_only')")) {
      return rs.next() && "on".equals(rs.getString(1));
    }
  }

  PgSessionDefaults pgDefaults;

  /** PostgreSQL: the session's default access mode is read-only ({@link PgSessionDefaults}). */
  boolean readOnlyByDefault() {
    PgSessionDefaults d = pgDefaults;
    if (d == null) {
      d = PgSessionDefaults.of(f.delegate);
      pgDefaults = d;
    }
    return d.readOnlyByDefault();
  }

  /**
   * SQLite's busy handler has no queue, so back-to-back writers under a lease could starve the
   * keeper's renewal; a transaction that has not started yet lets an in-flight renewal go first
   * (InnoDB and PostgreSQL queue the renewal themselves).
   */
  static void awaitRenewal(Lease lease) {
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
  void applySessionBounds(Lease lease, long[] current, Duration idle) throws SQLException {
    Duration lockWait = lockWaitBound(lease);
    if (!f.rules.trustsOnlyTheBoundsTheVerifyRead()
        && SessionBounds.inPlace(
            f.delegate,
            SessionBounds.seconds(lockWait.toMillis()),
            SessionBounds.seconds(idle.toMillis()))) {
      return; // weakened: the bounds read once per session, as if the verify did not read them
    }
    List<String> statements =
        LeaseInternals.strictSessionStatements(lease.manager(), idle, lockWait);
    if (SessionBounds.afterVerify(
            f.delegate,
            current,
            SessionBounds.seconds(lockWait.toMillis()),
            SessionBounds.seconds(idle.toMillis()),
            statements)
        && f.rules.restoresSessionBounds()) {
      f.state.flags |= TransactionState.SESSION_CHECK;
    }
  }

  /**
   * The lease a commit must prove, or null when it commits nothing fenced: the lease the open
   * transaction was verified under; else the bound lease if the server has a transaction open that
   * the fence never verified (writes through an object that bypassed the wrapper). The driver is
   * asked; a driver that cannot tell (sqlite-jdbc) leaves only the verified transaction to prove.
   */
  Lease proofLease(Lease bound) {
    Lease v = f.state.verified();
    if (v != null) {
      return v;
    }
    if (bound == null || !f.rules.commitCarriesProof() || f.state.poisoned()) {
      return null;
    }
    return Boolean.TRUE.equals(view.driverSession().inTransaction()) ? bound : null;
  }

  /** The server has a transaction open under the bound lease that the fence never verified. */
  boolean unprovenUnderLease() {
    Lease bound = LeaseInternals.currentOrNull();
    return f.state.verified() == null && bound != null && proofLease(bound) != null;
  }

  /**
   * True when the driver says the server has no transaction open although the fence verified one:
   * it ended behind the fence (a MySQL implicit commit such as MariaDB's {@code CREATE TEMPORARY
   * SEQUENCE}, a COMMIT sent through a driver object), so what runs now runs in a transaction no
   * verify covers. Free: the drivers keep the flag of the last OK packet or ReadyForQuery.
   */
  boolean endedBehindTheFence() {
    if (!f.rules.readsServerTransactionState() || f.state.verified() == null) {
      return false;
    }
    return Boolean.FALSE.equals(view.driverSession().inTransaction());
  }

  /**
   * PostgreSQL: whether the commit's proof rides in the COMMIT's own round trip (no round trip, but
   * one more statement for the server). Only where the commit cannot lean on STRICT's lock: the
   * transaction is in {@link Doubt} ({@link TransactionState#commitInDoubt}), or it writes what the
   * fence never verified (a transaction the server has open under the bound lease), or its verify
   * took no lock (VERIFY mode; a read-only transaction, where PostgreSQL refuses {@code FOR KEY
   * SHARE}: it writes no rows, but PostgreSQL delivers its NOTIFY at commit, which must not reach
   * listeners after a successor's claim; its proof is the plain verify, {@link #proveCommit}). Out
   * of doubt, STRICT's {@code FOR KEY SHARE}, held since the verify, orders the commit before a
   * successor's claim, as on the other databases. Not where {@link ReadOnlyPolicy#SKIP} skipped the
   * verify: nothing was verified.
   */
  boolean ridesInCommit(Lease proof) throws SQLException {
    if (proof == null
        || !f.rules.commitCarriesProof()
        || reader.lexer(proof).dialect != SqlDialect.POSTGRESQL) {
      return false;
    }
    boolean readOnly = readOnlyWithoutLocks(proof);
    if ((f.options.readOnly() == ReadOnlyPolicy.SKIP || !f.rules.provesReadOnlyCommits())
        && readOnly) {
      return false;
    }
    return !f.strategy.locks()
        || readOnly
        || proof != f.state.verified()
        || f.state.commitInDoubt()
        || !f.rules.provesOnlyInDoubt();
  }

  /**
   * Sends {@code <verify>; COMMIT} as one text: when the lease is not held the verify raises its
   * error in the server, which skips the COMMIT and leaves the transaction aborted; the fence then
   * rolls it back and refuses ({@link Losses#refusedByDatabase}). pgjdbc's own commit() afterwards
   * finds no transaction open and sends nothing.
   */
  void commitWithVerify(Lease lease) throws SQLException {
    proveCommit(lease, true);
    f.delegate.commit();
  }

  /**
   * Runs the commit's proof ({@code FenceRules.commitProofSql}), followed by {@code COMMIT} in the
   * same text when {@code commit}; on failure rolls back and throws (LF001 for a refusal).
   */
  void proveCommit(Lease lease, boolean commit) throws SQLException {
    Duration idle = idleBound(lease);
    // a read-only transaction (PostgreSQL refuses FOR KEY SHARE there) carries the plain verify
    boolean lock = f.strategy.locks() && !readOnlyWithoutLocks(lease);
    // prepared, so that pgjdbc server-prepares the text after its threshold like any statement
    try (PreparedStatement ps =
        f.delegate.prepareStatement(
            f.rules.commitProofSql(lease, lock) + (commit ? ";\nCOMMIT" : ""))) {
      LeaseInternals.bindVerify(lease, ps, 1, lock, idle);
      ps.execute();
    } catch (SQLException e) {
      view.driverSession().failed();
      try {
        f.delegate.rollback();
      } catch (SQLException r) {
        e.addSuppressed(r);
      }
      if (losses.refusedInServer(e)) {
        throw losses.refusedByDatabase(lease, e);
      }
      throw e;
    }
  }
}
