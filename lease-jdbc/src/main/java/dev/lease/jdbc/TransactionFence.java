package dev.lease.jdbc;

import dev.lease.core.Lease;
import dev.lease.core.LeaseListener;
import dev.lease.core.internal.LeaseInternals;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fencing state of one connection wrapper and the rules that move it: where the verify runs,
 * when a transaction counts as verified, poisoning, and the reset at every transaction boundary.
 *
 * <ul>
 *   <li>The verify runs lazily, at the first statement of a transaction while a lease is bound to
 *       the executing thread (also before {@code setSavepoint} and vendor {@code unwrap}), never at
 *       {@code setAutoCommit(false)}: pools and Spring often never call it, and an eager verify
 *       would force {@code LazyConnectionDataSourceProxy} to fetch and break a later {@code
 *       setReadOnly}/{@code setTransactionIsolation} on pgjdbc (anchors checklist 7, 17).
 *   <li>Exactly once per transaction: {@link #verified} holds the lease it ran under; later
 *       statements compare the bound lease by reference and fail if it changed (checklist 24).
 *   <li>Reset on commit, rollback, {@code setAutoCommit(true)}, close and transaction control
 *       written as SQL; not on {@code rollback(Savepoint)} (checklist 10, HikariCP #2142).
 *   <li>A refusal poisons the transaction: every statement and {@code commit()} fail until a
 *       rollback; rollback and close never fail because of a lease (checklist 19, 20).
 *   <li>Loss ends work: the verified lease's loss poisons the transaction and cancels the statement
 *       running on it.
 * </ul>
 *
 * Connections are used by one thread at a time; only the loss listener touches this from another
 * thread, through the volatile fields.
 */
final class TransactionFence {

  private static final Logger log = LoggerFactory.getLogger(TransactionFence.class);

  private final Connection delegate;
  private final FencingOptions options;
  private final boolean strict;

  /** The lease the open transaction was verified under; null when none was. */
  private volatile Lease verified;

  private volatile boolean poisoned;
  private volatile Lease poisonedLease;
  private volatile String poisonReason;

  /** The driver statement executing under {@link #verified}, cancelled if the lease is lost. */
  private volatile Statement running;

  /** BEGIN / START TRANSACTION was executed as SQL while the connection was in autocommit mode. */
  private boolean explicitTransaction;

  private Lease.Registration lossRegistration;

  /**
   * The session bounds applied to this connection (STRICT on MySQL/MariaDB), to apply them once.
   */
  private List<String> appliedBounds;

  TransactionFence(Connection delegate, FencingOptions options) {
    this.delegate = delegate;
    this.options = options;
    this.strict = options.mode() == FencingMode.STRICT;
  }

  /**
   * The pass-through test of the hot path: true when a statement of {@code kind} needs no fencing
   * work at all. No allocation: a thread-local read and field reads.
   */
  boolean idle(int kind) {
    return kind == SqlKind.OTHER
        && verified == null
        && !poisoned
        && !explicitTransaction
        && LeaseInternals.currentOrNull() == null;
  }

  /** Runs a statement (or an updatable result set's row change) under the fencing rules. */
  <T> T execute(Statement statement, int kind, SqlCall<T> call) throws SQLException {
    if (kind == SqlKind.ROLLBACK) {
      try {
        return call.call();
      } finally {
        endTransaction();
      }
    }
    checkNotPoisoned();
    if (kind == SqlKind.COMMIT || kind == SqlKind.BEGIN) {
      T result = call.call();
      endTransaction();
      if (kind == SqlKind.BEGIN && delegate.getAutoCommit()) {
        explicitTransaction = true;
      }
      return result;
    }
    Lease lease = LeaseInternals.currentOrNull();
    T result;
    if (verified != null) {
      if (lease != verified) {
        throw leaseChanged(lease);
      }
      result = run(statement, call);
    } else if (lease == null) {
      result = call.call();
    } else if (delegate.getAutoCommit() && !explicitTransaction) {
      return autoCommitStatement(statement, lease, call);
    } else {
      verifyOrSkip(lease);
      result = run(statement, call);
    }
    if (kind == SqlKind.DDL) {
      // MySQL committed around it: the next statement needs a new verify. A transaction begun with
      // BEGIN as SQL stays explicit: PostgreSQL and SQLite are still inside it, and treating it as
      // autocommit would commit it early.
      boolean explicit = explicitTransaction;
      endTransaction();
      explicitTransaction = explicit;
    }
    return result;
  }

  /**
   * Before a call that may reach the database outside the wrapper's statements ({@code
   * setSavepoint}, vendor {@code unwrap}): verifies now if a lease is bound and a transaction is
   * open.
   */
  void verifyIfInTransaction() throws SQLException {
    Lease lease = LeaseInternals.currentOrNull();
    checkNotPoisoned();
    if (lease == null) {
      return;
    }
    if (verified != null) {
      if (lease != verified) {
        throw leaseChanged(lease);
      }
      return;
    }
    if (delegate.getAutoCommit() && !explicitTransaction) {
      return;
    }
    verifyOrSkip(lease);
  }

  void commit() throws SQLException {
    checkNotPoisoned();
    checkStillHeld();
    try {
      delegate.commit();
    } finally {
      endTransaction();
    }
  }

  /** Never fails because of a lease. */
  void rollback() throws SQLException {
    try {
      delegate.rollback();
    } finally {
      endTransaction();
    }
  }

  /**
   * {@code setAutoCommit(true)} with a transaction open commits it (JDBC spec), so a poisoned one
   * is rolled back instead and the caller told; a redundant call changes nothing (checklist 8, 9).
   */
  void setAutoCommit(boolean autoCommit) throws SQLException {
    boolean was = delegate.getAutoCommit();
    if (autoCommit == was) {
      delegate.setAutoCommit(autoCommit);
      return;
    }
    if (autoCommit && poisoned) {
      LeaseLostSQLException refused =
          poisonedException("setAutoCommit(true) would commit it;" + " it was rolled back instead");
      try {
        delegate.rollback();
      } catch (SQLException e) {
        refused.addSuppressed(e);
      }
      endTransaction();
      delegate.setAutoCommit(true);
      throw refused;
    }
    try {
      delegate.setAutoCommit(autoCommit);
    } finally {
      if (!poisoned) { // poison stays until rollback, even across setAutoCommit(false)
        endTransaction();
      }
    }
  }

  /**
   * The connection is closed or handed back. A verified or poisoned transaction still open is
   * rolled back here rather than left to the pool: not every pool rolls back on return (Tomcat
   * JDBC's {@code rollbackOnReturn} is off by default), and the next borrower's commit would then
   * commit a stale holder's writes. Never fails because of a lease.
   */
  void closing() {
    try {
      if ((poisoned || verified != null) && !delegate.isClosed() && !delegate.getAutoCommit()) {
        delegate.rollback();
      }
    } catch (SQLException e) {
      log.debug("could not roll back a fenced transaction at close", e);
    } finally {
      endTransaction();
    }
  }

  /** The transaction ended outside the connection (an XA branch, through its XAResource). */
  void endedElsewhere() {
    endTransaction();
  }

  /** The connection was aborted: forget the transaction (the driver ends it). */
  void closed() {
    endTransaction();
  }

  /**
   * A pool's request boundary: the next borrower starts clean, except that poison stays until
   * rollback.
   */
  void endRequest() {
    if (!poisoned) {
      endTransaction();
    }
  }

  // ---- the verify -------------------------------------------------------------------------------

  private void verifyOrSkip(Lease lease) throws SQLException {
    if (options.readOnly() == ReadOnlyPolicy.SKIP && delegate.isReadOnly()) {
      verified = lease; // nothing to verify; later statements still check the bound lease
      return;
    }
    verify(lease);
  }

  private void verify(Lease lease) throws SQLException {
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
    boolean held;
    try {
      if (lock) {
        applySessionBounds(lease, idle);
      }
      held = LeaseInternals.verifyInTransaction(lease, delegate, lock, idle);
    } catch (SQLException e) {
      // the transaction may be half-aborted (PostgreSQL) or still open (MySQL lock wait timeout):
      // poison it so nothing commits, and give the caller the database's own error
      poison(lease, "its verify failed: " + e.getMessage());
      throw e;
    }
    if (!held) {
      throw refuse(lease, "the database says it is no longer held by this holder at this term");
    }
    verified = lease;
    lossRegistration = lease.onLoss(this::leaseLost);
    notify(lease, l -> l.transactionVerified(lease));
  }

  /**
   * PostgreSQL refuses {@code FOR KEY SHARE} in a read-only transaction (SQLState 25006, found by
   * SpringTransactionTest with {@code readOnly=true}) and SQLite's strict verify is a write; a
   * read-only transaction cannot write, so there is nothing for the lock to order and the plain
   * verify suffices. pgjdbc and sqlite-jdbc answer {@code isReadOnly()} from memory; MySQL
   * Connector/J may ask the server, and InnoDB allows the share lock anyway, so it is not asked
   * there.
   */
  private boolean readOnlyWithoutLocks(Lease lease) throws SQLException {
    String product = lease.manager().databaseProduct();
    return ("PostgreSQL".equals(product) || "SQLite".equals(product)) && delegate.isReadOnly();
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

  /** STRICT on MySQL/MariaDB: lock-wait and idle bounds for the session, once per connection. */
  private void applySessionBounds(Lease lease, Duration idle) throws SQLException {
    Duration lockWait =
        options.lockWaitTimeout() != null
            ? options.lockWaitTimeout()
            : lease.manager().timings().leaseDuration();
    List<String> bounds = LeaseInternals.strictSessionStatements(lease.manager(), idle, lockWait);
    if (bounds.isEmpty() || bounds.equals(appliedBounds)) {
      return;
    }
    SessionBounds.apply(delegate, bounds);
    appliedBounds = bounds;
  }

  private <T> T autoCommitStatement(Statement statement, Lease lease, SqlCall<T> call)
      throws SQLException {
    switch (options.autoCommit()) {
      case REFUSE:
        throw new LeaseLostSQLException(
            "refused an autocommit statement under "
                + lease
                + ": with AutoCommitPolicy.REFUSE, run it in a transaction (setAutoCommit(false))",
            LeaseLostSQLException.AUTOCOMMIT_REFUSED,
            lease,
            null);
      case VERIFY_ONLY:
        try {
          verify(lease);
          return run(statement, call);
        } finally {
          endTransaction(); // the verify's autocommit transaction has ended; so has the statement's
        }
      case VERIFIED_TRANSACTION:
      default:
        return asVerifiedTransaction(statement, lease, call);
    }
  }

  /**
   * Autocommit off, verify, the statement, commit, autocommit back on; rolled back on any failure.
   */
  private <T> T asVerifiedTransaction(Statement statement, Lease lease, SqlCall<T> call)
      throws SQLException {
    delegate.setAutoCommit(false);
    T result;
    try {
      verify(lease);
      result = run(statement, call);
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
      endTransaction();
    }
    delegate.setAutoCommit(true);
    return result;
  }

  private <T> T run(Statement statement, SqlCall<T> call) throws SQLException {
    running = statement;
    try {
      return call.call();
    } catch (SQLException e) {
      if (poisoned) {
        // the lease was lost while the statement ran and the loss cancelled it
        throw poisonedException("its statement failed after the loss: " + e.getMessage(), e);
      }
      throw e;
    } finally {
      running = null;
    }
  }

  // ---- loss, refusal, poison
  // ----------------------------------------------------------------------

  /**
   * The verified lease was lost (on a lease thread): poison the transaction, cancel its statement.
   */
  private void leaseLost(Lease lease) {
    if (verified != lease) {
      return;
    }
    poison(lease, "its lease was lost while it was open");
    Statement s = running;
    if (s != null) {
      // off the reporting thread: pgjdbc and Connector/J open a new connection to cancel, and the
      // thread that noticed the loss may be a keeper timer other leases depend on
      CompletableFuture.runAsync(
          () -> {
            try {
              s.cancel();
            } catch (SQLException | RuntimeException e) {
              log.debug("could not cancel a statement under lost {}", lease, e);
            }
          });
    }
  }

  private LeaseLostSQLException refuse(Lease lease, String why) {
    poisoned = true;
    poisonedLease = lease;
    poisonReason = "it was refused under " + lease + ": " + why;
    log.warn(
        "refused a transaction under lease {} term {} instance {}: {}",
        lease.name(),
        lease.term(),
        lease.instance(),
        why);
    notify(lease, l -> l.transactionRefused(lease));
    return new LeaseLostSQLException(
        "transaction refused: lease "
            + lease.name()
            + (lease.term() == 0 ? "" : " term " + lease.term())
            + " (instance "
            + lease.instance()
            + "): "
            + why
            + "; roll back",
        LeaseLostSQLException.REFUSED,
        lease,
        null);
  }

  private void poison(Lease lease, String why) {
    if (poisoned) {
      return;
    }
    poisonedLease = lease;
    poisonReason = "lease " + lease.name() + " term " + lease.term() + ": " + why;
    poisoned = true;
    log.warn(
        "poisoned a transaction under lease {} term {} instance {}: {}",
        lease.name(),
        lease.term(),
        lease.instance(),
        why);
    notify(lease, l -> l.transactionPoisoned(lease));
  }

  private LeaseLostSQLException leaseChanged(Lease lease) {
    Lease was = verified;
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

  /**
   * VERIFY mode only: a release sets the row's expiry to now, so the margin between the local
   * deadline and the expiry that VERIFY relies on is gone at once and a successor may already hold
   * the lease; nothing in the database orders this commit before its claim (STRICT's row lock
   * does), so the commit is refused. A loss poisons the transaction through its loss listener. The
   * local deadline is deliberately not re-checked here: that would only narrow VERIFY's documented
   * gap (a pause between the check and the commit), not close it.
   */
  private void checkStillHeld() throws LeaseLostSQLException {
    Lease lease = verified;
    if (!strict && lease != null && lease.isReleased()) {
      throw refuse(
          lease,
          "it was released after this transaction was verified, and VERIFY mode"
              + " cannot order this commit before a successor's claim");
    }
  }

  private void checkNotPoisoned() throws LeaseLostSQLException {
    if (poisoned) {
      throw poisonedException(null);
    }
  }

  private LeaseLostSQLException poisonedException(String more) {
    return poisonedException(more, null);
  }

  private LeaseLostSQLException poisonedException(String more, Throwable cause) {
    return new LeaseLostSQLException(
        "transaction poisoned ("
            + poisonReason
            + ")"
            + (more == null ? "" : "; " + more)
            + "; roll it back",
        LeaseLostSQLException.POISONED,
        poisonedLease,
        cause);
  }

  private void endTransaction() {
    Lease.Registration r = lossRegistration;
    lossRegistration = null;
    verified = null;
    poisoned = false;
    poisonedLease = null;
    poisonReason = null;
    explicitTransaction = false;
    if (r != null) {
      r.close();
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
