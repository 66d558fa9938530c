package dev.lease.core;

import java.time.Duration;

/**
 * Observes leases: every method has an empty default, so implement only what you need. Exceptions
 * are logged and ignored. {@link #lost} runs on the manager's loss-handling threads, so a slow one
 * delays no renewal; the others run on the thread that did the step (a keeper's attempt thread, the
 * caller of {@code tryClaim} or {@code release}, a fenced connection's thread): keep them quick.
 */
public interface LeaseListener {

  /** This process claimed {@code lease} (a hand-over: the term grew). */
  default void claimed(Lease lease) {}

  /**
   * A claim ({@code tryClaim}, {@code runIfFree}) found {@code name} held by another holder; with
   * {@link #claimed}, the claim attempts and their outcomes.
   */
  default void claimRefused(String name) {}

  /** A renewal succeeded. */
  default void renewed(Lease lease) {}

  /**
   * A renewal attempt failed; the keeper retries at the renew interval until the local deadline.
   */
  default void renewalFailed(Lease lease, Exception cause) {}

  /**
   * One renewal of {@code lease} ended with {@code outcome}: every attempt of the manager's batched
   * renewal and of {@link Lease#renew()}, besides {@link #renewed} / {@link #renewalFailed} /
   * {@link #lost}. Count them per outcome.
   */
  default void renewalCompleted(Lease lease, RenewalOutcome outcome) {}

  /**
   * One pass of the manager's batched renewal ended: it sent the {@code leases} it holds in one
   * statement per 1,000, and {@code renewed} were renewed, {@code lost} found lost, {@code failed}
   * not renewed by a statement that failed or timed out (retried next pass). {@code elapsed} is the
   * time from the pass's start to its last statement's answer. Runs on an attempt thread.
   */
  default void renewalPass(int leases, int renewed, int lost, int failed, Duration elapsed) {}

  /**
   * This process gave the lease up because it can no longer prove it holds it. {@code reason}
   * {@link LossReason#LOCAL_DEADLINE} is self-fencing: no renewal succeeded within the local
   * deadline, so the holder stopped before the database would let anyone else claim.
   */
  default void lost(Lease lease, LossReason reason) {}

  /** This process released the lease. */
  default void released(Lease lease) {}

  /**
   * This process handed {@code lease} to the instance {@code successor} ({@link Lease#transferTo}):
   * the database now has the next term, {@code newTerm}, pending for the successor, and {@code
   * lease} has ended.
   */
  default void transferred(Lease lease, String successor, long newTerm) {}

  /**
   * This process adopted {@code lease}, transferred to its instance by the previous holder: the
   * term is the one the transfer wrote. Reported instead of {@link #claimed}.
   */
  default void adopted(Lease lease) {}

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
