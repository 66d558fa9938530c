package dev.lease.core;

/**
 * Observes leases: every method has an empty default, so implement only what you need. Exceptions
 * are logged and ignored. {@link #lost} runs on the manager's loss-handling threads, so a slow one
 * delays no renewal; the others run on the thread that did the step (a keeper's attempt thread, the
 * caller of {@code tryClaim} or {@code release}, a fenced connection's thread): keep them quick.
 */
public interface LeaseListener {

  /** This process claimed {@code lease} (a hand-over: the term grew). */
  default void claimed(Lease lease) {}

  /** A renewal succeeded. */
  default void renewed(Lease lease) {}

  /**
   * A renewal attempt failed; the keeper retries at the renew interval until the local deadline.
   */
  default void renewalFailed(Lease lease, Exception cause) {}

  /** This process gave the lease up because it can no longer prove it holds it. */
  default void lost(Lease lease, LossReason reason) {}

  /** This process released the lease. */
  default void released(Lease lease) {}

  /** A fenced transaction was verified under {@code lease} (lease-jdbc). */
  default void transactionVerified(Lease lease) {}

  /**
   * A fenced transaction was refused: the database says {@code lease} is no longer held
   * (lease-jdbc).
   */
  default void transactionRefused(Lease lease) {}

  /** A transaction under {@code lease} was poisoned: it must be rolled back (lease-jdbc). */
  default void transactionPoisoned(Lease lease) {}

  /**
   * The scheduler gave up the unfinished instant {@code instantMs} of {@code job} for a later one.
   */
  default void instantSuperseded(String job, long instantMs) {}

  /** The scheduler skipped instant {@code instantMs} of {@code job}, overrun by a longer round. */
  default void instantSkipped(String job, long instantMs) {}
}
