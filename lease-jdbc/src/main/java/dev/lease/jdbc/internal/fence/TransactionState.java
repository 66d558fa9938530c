package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.internal.FenceRules;

/**
 * Where a {@link TransactionFence} stands: the open fenced transaction (one object per transaction,
 * so its identity is its generation: a loss registered for one never reaches the next), whether its
 * verify's lock may be gone, a transaction begun as SQL that the fence saw begin, and the bits that
 * tell the hot path whether a statement with no lease bound needs any work at all.
 *
 * <p>Written by the owner thread; the loss listener reads the open transaction and poisons it under
 * this object's monitor ({@link Losses#leaseLost}; the fence object's own monitor is not used).
 */
final class TransactionState {

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

  /**
   * A transaction in which driver objects were handed out has ended: the physical connection must
   * be retired before the call that ended it returns ({@link SessionView#retireIfDue}).
   */
  static final int RETIRE = 1 << 5;

  private final FenceRules rules;

  int flags;

  /** The open fenced transaction, null when none is. */
  volatile FencedTransaction txn;

  /** The verify's lock may be gone ({@link Doubt}): verify again before use. */
  boolean reverify;

  /** A transaction begun as SQL that the fence saw begin (for drivers that cannot tell). */
  boolean sqlTransaction;

  TransactionState(FenceRules rules) {
    this.rules = rules;
  }

  /** The lease the open transaction was verified under; null when none was. */
  Lease verified() {
    FencedTransaction t = txn;
    return t != null && t.confirmed ? t.lease : null;
  }

  boolean poisoned() {
    FencedTransaction t = txn;
    return t != null && t.poisoned;
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
    if (t != null && t.driverObjects && rules.retiresConnectionsOfDriverObjects()) {
      flags |= RETIRE;
    }
    if (t != null && t.registration != null) {
      t.registration.close();
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
   * The verify's lock may be gone although the transaction goes on ({@code why}, one of the {@link
   * Doubt} list, names the cause at each call): the next statement and the commit verify again
   * ({@code FenceRules.reverifiesAfterDoubt}).
   */
  void doubt(Doubt why) {
    if (rules.reverifiesAfterDoubt() && verified() != null) {
      reverify = true;
    }
  }

  /**
   * Whether a commit of the open transaction must prove itself: a doubt not yet cleared by a
   * verify, or a driver object handed out in it ({@link Doubt#DRIVER_OBJECT}, which no verify
   * clears: the object may act at any time until the transaction ends).
   */
  boolean commitInDoubt() {
    if (reverify) {
      return true;
    }
    FencedTransaction t = txn;
    return t != null && t.driverObjects && rules.reverifiesAfterDoubt();
  }
}
