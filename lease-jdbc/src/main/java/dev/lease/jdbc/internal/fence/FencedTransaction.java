package dev.lease.jdbc.internal.fence;

import dev.lease.core.Lease;
import dev.lease.jdbc.LeaseLostSQLException;
import java.sql.Statement;

/**
 * One fenced transaction: the lease it was verified (or refused) under, the thread that did it,
 * whether the database confirmed it, its poison, the statement running in it. Written by the owner
 * thread; the loss listener reads and poisons it under the monitor of the fence's TransactionState.
 */
final class FencedTransaction {
  final Lease lease;
  final Thread by;
  volatile boolean confirmed;
  volatile boolean poisoned;
  volatile String poisonReason;

  /** What poisoned it (the refusal's or the loss's reason); set with {@link #poisonReason}. */
  volatile LeaseLostSQLException.Reason poisonedBy;

  volatile Statement running;
  Lease.Registration registration;

  /**
   * A driver object that reaches the database was handed out in this transaction ({@code unwrap},
   * {@code getObject(.., Class)} of a vendor type): when the transaction ends, the physical
   * connection is retired, so no handle on it outlives the transaction ({@link
   * TransactionState#retire}).
   */
  boolean driverObjects;

  FencedTransaction(Lease lease) {
    this.lease = lease;
    this.by = Thread.currentThread();
  }
}
