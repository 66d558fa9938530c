package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.core.LeaseListener;
import dev.lease.core.LossReason;
import dev.lease.core.internal.LeaseInternals;
import dev.lease.jdbc.LeaseLostSQLException;
import dev.lease.jdbc.LeaseLostSQLException.Reason;
import dev.lease.jdbc.internal.sql.SqlSummary;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loss, refusal and poison for a {@link TransactionFence}: a lease lost while its transaction is
 * open poisons that transaction and cancels its running statement ({@link #leaseLost}); the
 * database's refusal of a verify becomes LF001 in one place ({@link #refusedByDatabase}); every
 * refused or poisoned transaction is logged once at WARN and reported to the listeners; and the
 * fence's own exceptions are made here, with messages that say what to do.
 */
final class Losses {

  private static final Logger log = LoggerFactory.getLogger(FenceContext.LOGGER);

  private final FenceContext f;

  /** A lost lease's statement being cancelled on another thread (review L1); null when none. */
  volatile Statement cancelling;

  Losses(FenceContext f) {
    this.f = f;
  }

  /**
   * A statement or commit of the open transaction failed while its lease is no longer held (lost,
   * or past its local deadline): typically the server ended the session because of the lease's own
   * idle-in-transaction bound while this process stood still (PostgreSQL 25P03, then "connection
   * closed"; MariaDB's idle_transaction_timeout), before the loss was noticed here. The caller is
   * told the lease was lost (poisoned, {@value LeaseLostSQLException#POISONED}), with the server's
   * error as its cause; null if the lease is still held.
   */
  LeaseLostSQLException lostDuring(SQLException e) {
    FencedTransaction t = f.state.txn;
    if (!notHeld(t) || !f.rules.reportsLossAsLeaseLost()) {
      return null;
    }
    Lease lease = t.lease;
    poison(
        lease,
        "its lease was lost ("
            + lease.lossReason().map(Enum::name).orElse("local deadline passed")
            + ") while it was open",
        Reason.LOST_LOCALLY);
    return poisonedException("then the database failed it: " + e.getMessage(), e);
  }

  /**
   * The error to throw for a statement of transaction {@code t} (null when none is open) that
   * failed ({@link TransactionFence#run}): a verify the driver sent again on its own and the server
   * refused, a statement a loss cancelled, a failure while the lease is no longer held, else the
   * database's own error.
   */
  SQLException ofFailedStatement(FencedTransaction t, SQLException e) {
    if (t != null && refusedInServer(e)) {
      // a verify the driver sent again on its own (MariaDB transactionReplay) was refused
      return refusedByDatabase(t.lease, e);
    }
    if (f.state.poisoned()) {
      // the lease was lost while the statement ran and the loss cancelled it
      return poisonedException("its statement failed after the loss: " + e.getMessage(), e);
    }
    LeaseLostSQLException lost = lostDuring(e);
    return lost != null ? lost : e;
  }

  /**
   * The error to throw for a failed {@code commit()}: lease-lost only for errors that say the
   * session was gone before the commit arrived ({@link #SESSION_GONE}); any other failure of a
   * commit leaves its outcome unknown, and the driver's error says so better.
   */
  SQLException ofFailedCommit(SQLException e) {
    // a driver's error may carry no SQLState (Set.of(..).contains(null) throws, and an exception
    // escaping here would skip the fence's bookkeeping of the failed commit)
    String state = e.getSQLState();
    if (state != null && SESSION_GONE.contains(state)) {
      LeaseLostSQLException lost = lostDuring(e);
      if (lost != null) {
        return lost;
      }
    }
    return e;
  }

  /**
   * SQLStates that say the session was gone before the call reached the server: connection does not
   * exist (pgjdbc, HikariCP's closed proxy), PostgreSQL's idle-in-transaction termination.
   */
  static final Set<String> SESSION_GONE = Set.of("08003", "25P03");

  /** True if {@code t} is under a lease that was lost or whose local deadline passed. */
  static boolean notHeld(FencedTransaction t) {
    Lease lease = t == null ? null : t.lease;
    return lease != null && !lease.isReleased() && !lease.isHeld();
  }

  /**
   * {@code rollback()}: the open transaction's lease is lost (or it is poisoned), so a rollback
   * that fails because the server already ended the session is no error ({@link #closedQuietly}).
   */
  boolean rollbackOfLoss() {
    return f.rules.reportsLossAsLeaseLost() && (f.state.poisoned() || notHeld(f.state.txn));
  }

  boolean closedQuietly() {
    try {
      return f.delegate.isClosed();
    } catch (SQLException e) {
      return false;
    }
  }

  /**
   * Before a commit: the lease the transaction was verified under is lost. The loss listener that
   * poisons this transaction runs later, on the loss executor: the lease's own state decides a
   * commit that comes first.
   */
  void refuseIfLost(Lease verified) throws LeaseLostSQLException {
    if (verified.isLost() && f.rules.commitReadsLeaseState()) {
      poison(verified, "its lease was lost while it was open", Reason.LOST_LOCALLY);
      throw poisonedException(null);
    }
  }

  /**
   * The verified lease was lost (on a lease thread): poison the transaction and cancel its
   * statement, if the transaction it was registered for is still the open one.
   */
  void leaseLost(Lease lease, FencedTransaction mine) {
    Statement s;
    FencedTransaction t;
    synchronized (f.state) {
      t = f.state.txn;
      if (t == null || t.lease != lease || (mine != null && t != mine)) {
        return; // that transaction has ended; the open one is another's
      }
      if (!poisonLocked(t, "its lease was lost while it was open", Reason.LOST_LOCALLY)) {
        return;
      }
      s = t.running;
    }
    reportPoisoned(lease, "its lease was lost while it was open");
    if (s != null) {
      // off the reporting thread: pgjdbc and Connector/J open a new connection to cancel, and the
      // thread that noticed the loss may be a keeper timer other leases depend on. The monitor
      // only for checking the transaction again; the cancel outside it, so the owner's rollback
      // and close never wait for a driver's cancel (review L1). A cancel must never reach a
      // statement of the next transaction: the owner's next statement waits for it (awaitCancel).
      f.cancelExecutor.execute(
          () -> {
            if (mine != null) {
              synchronized (f.state) {
                if (f.state.txn != mine || mine.running != s) {
                  return;
                }
                cancelling = s;
              }
              try {
                cancel(s, lease);
              } finally {
                synchronized (f.state) {
                  cancelling = null;
                  f.state.notifyAll();
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
  void awaitCancel() {
    boolean interrupted = false;
    synchronized (f.state) {
      while (cancelling != null) {
        try {
          f.state.wait();
        } catch (InterruptedException e) {
          interrupted = true; // the loss interrupts the worker: wait on, bounded by the cancel
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  static void cancel(Statement s, Lease lease) {
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
  boolean refusedInServer(SQLException e) {
    return f.rules.isRefusal(e);
  }

  /**
   * The one place where the database's refusal of a verify becomes {@value
   * LeaseLostSQLException#REFUSED}: the server's error ({@code cause}; null when a verify returned
   * no row instead) is kept as the cause, the transaction is poisoned, listeners are told.
   */
  LeaseLostSQLException refusedByDatabase(Lease lease, SQLException cause) {
    String why = "the database says it is no longer held by this holder at this term";
    // poisoned before the loss is reported: the lease's loss listener (on the loss executor, which
    // may run before this thread goes on) then finds it poisoned and does not report it again
    boolean first = markRefused(lease, why, Reason.REFUSED_BY_DATABASE);
    boolean lostHere = false;
    if (f.rules.reportsRefusalToLease()) {
      boolean lostBefore = lease.lossReason().isPresent();
      LeaseInternals.lostInDatabase(lease); // lost at once; later transactions refused locally
      lostHere = !lostBefore && lease.lossReason().orElse(null) == LossReason.DATABASE;
    }
    // lostHere: lease-core has just logged this refusal at WARN ("lost lease ...: the database
    // refused a fenced transaction"), so this line is the second for one refused transaction
    return refused(lease, why, cause, first && !lostHere, Reason.REFUSED_BY_DATABASE);
  }

  LeaseLostSQLException refuse(Lease lease, String why) {
    return refuse(lease, why, null);
  }

  LeaseLostSQLException refuse(Lease lease, String why, SQLException cause) {
    return refused(
        lease, why, cause, markRefused(lease, why, Reason.LOST_LOCALLY), Reason.LOST_LOCALLY);
  }

  /** Poisons the transaction under {@code lease} as refused; false if it already was poisoned. */
  boolean markRefused(Lease lease, String why, Reason reason) {
    FencedTransaction t = f.state.transaction(lease);
    synchronized (f.state) {
      boolean first = !t.poisoned;
      t.poisoned = true;
      t.poisonReason = "it was refused under " + lease + ": " + why;
      t.poisonedBy = reason;
      return first;
    }
  }

  /**
   * Reports a refusal (listeners always: they count refusals) and makes its exception. Logged at
   * WARN once per transaction ({@code warn}); at DEBUG when the transaction's refusal or poisoning
   * was already logged at WARN, so one refused transaction is one WARN line.
   */
  LeaseLostSQLException refused(
      Lease lease, String why, SQLException cause, boolean warn, Reason reason) {
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
        cause,
        reason);
  }

  /** Poisons the open transaction under {@code lease} (owner thread). */
  void poison(Lease lease, String why, Reason reason) {
    FencedTransaction t = f.state.transaction(lease);
    boolean now;
    synchronized (f.state) {
      now = poisonLocked(t, why, reason);
    }
    if (now) {
      reportPoisoned(lease, why);
    }
  }

  /** Marks {@code t} poisoned; false if it already was. Under the monitor. */
  boolean poisonLocked(FencedTransaction t, String why, Reason reason) {
    if (t.poisoned) {
      return false;
    }
    t.poisonReason = "lease " + t.lease.name() + " term " + t.lease.term() + ": " + why;
    t.poisonedBy = reason;
    t.poisoned = true;
    return true;
  }

  void reportPoisoned(Lease lease, String why) {
    log.warn(
        "poisoned a transaction under lease {} term {} instance {}: {}",
        lease.name(),
        lease.term(),
        lease.instance(),
        why);
    notify(lease, l -> l.transactionPoisoned(lease));
  }

  LeaseLostSQLException leaseChanged(Lease lease) {
    Lease was = f.state.verified();
    poison(
        was,
        "the thread's lease changed to " + lease + " inside the transaction",
        Reason.LEASE_CHANGED);
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

  LeaseLostSQLException mixed(Lease lease, SqlSummary summary, StatementSource source) {
    String what = source == StatementSource.BATCH ? "a batch" : "a SQL text";
    String why =
        summary.ambiguous()
            ? what
                + " whose statements cannot be told apart without knowing the server's settings"
                + " (MySQL versioned comments of different versions)"
            : what
                + " with "
                + summary.describe()
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

  /**
   * A statement whose effect would land outside the verified transaction, refused before it was
   * sent ({@code OutsideTransactionPolicy.REFUSE}, MySQL/MariaDB {@code INSERT DELAYED}).
   */
  static LeaseLostSQLException outsideTransactionRefused(Lease lease, String why) {
    return outsideTransactionRefused(
        lease,
        why
            + ", where nothing orders its effect before a successor's claim. Run it without a"
            + " lease bound (it is then not fenced: migrations, maintenance), or, accepting that a"
            + " holder paused at the wrong moment lands it after a takeover, let it run after a"
            + " verify of its own with FencingOptions.builder().outsideTransaction("
            + "OutsideTransactionPolicy.VERIFY_FIRST)",
        true);
  }

  /** {@link #outsideTransactionRefused(Lease, String)} with {@code message} as it is. */
  static LeaseLostSQLException outsideTransactionRefused(
      Lease lease, String message, boolean unused) {
    return new LeaseLostSQLException(
        "refused under " + lease + " before it was sent: " + message,
        LeaseLostSQLException.OUTSIDE_TRANSACTION,
        lease,
        null);
  }

  static LeaseLostSQLException autoCommitRefused(Lease lease) {
    return new LeaseLostSQLException(
        "refused an autocommit statement under "
            + lease
            + ": with AutoCommitPolicy.REFUSE, run it in a transaction (setAutoCommit(false))",
        LeaseLostSQLException.AUTOCOMMIT_REFUSED,
        lease,
        null);
  }

  LeaseLostSQLException poisonedException(String more) {
    return poisonedException(more, null);
  }

  LeaseLostSQLException poisonedException(String more, Throwable cause) {
    FencedTransaction t = f.state.txn;
    return new LeaseLostSQLException(
        "transaction poisoned ("
            + (t == null ? "its lease was lost" : t.poisonReason)
            + ")"
            + (more == null ? "" : "; " + more)
            + "; roll it back",
        LeaseLostSQLException.POISONED,
        t == null ? null : t.lease,
        cause,
        t == null || t.poisonedBy == null ? Reason.LOST_LOCALLY : t.poisonedBy);
  }

  /** A LOCK TABLES under a lease whose list leaves out the lease table ({@link LockTables}). */
  static LeaseLostSQLException lockTablesRefused(Lease lease) {
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
   * MariaDB 10.6+ releases a transaction's shared locks at XA PREPARE, STRICT's share lock on the
   * lease row included: a branch prepared under term t no longer holds term t+1's claim back, and
   * its XA COMMIT (by the transaction manager, from any connection) could commit after the
   * successor's claim. Refused before it is sent; the branch stays as it was (IDLE after XA END).
   */
  static LeaseLostSQLException xaPrepareRefused(Lease lease) {
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

  void notify(Lease lease, Consumer<LeaseListener> event) {
    LeaseListener own = f.options.listener();
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
