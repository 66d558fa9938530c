package dev.lease.core.internal;

/**
 * Deliberately broken variants of lease-core's real mechanisms, for the negative controls of the
 * tests: each one restores a bug the lifecycle tests must catch. Set with {@link
 * LeaseInternals#faultForTesting}; never in production.
 *
 * <p>Not API: it may change in any release.
 */
public enum TestFault {
  /** A release gives the row back first and stops the work under the lease afterwards. */
  RELEASE_BEFORE_STOPPING_WORK,
  /** A closed manager still claims and holds, and a claim racing close() is handed out. */
  NO_CLOSED_CHECK,
  /** The grace period after a loss is timed on the keeper's scheduler, which close() stops. */
  GRACE_ON_KEEPER_SCHEDULER,
  /** A release or close whose work does not stop within the grace runs the failure policy. */
  POLICY_ON_RELEASE,
  /** The failure policy may run more than once for one lease. */
  POLICY_NOT_ONCE,
  /** Loss callbacks and listeners run on the thread that found the loss (a keeper thread). */
  LOSS_HANDLING_INLINE,
  /** An attempt is bounded per statement only; borrowing its connection has no bound. */
  UNBOUNDED_ATTEMPT,
  /**
   * runUnder reports a loss that came after the work had returned (the scheduler then counts a
   * round that ran to its end as cut short).
   */
  LOSS_AFTER_RETURN_IS_A_LOSS,
  /** A lease lost at its local deadline is not released. */
  NO_RELEASE_AT_DEADLINE,
  /** A new lease row starts at term 0 (terms repeat after the row is deleted). */
  TERM_FROM_ZERO,
  /** A failed session restore after a failed attempt replaces the attempt's own error. */
  RESTORE_HIDES_ERROR,
  /** MySQL/MariaDB sessions keep the saved settings in {@code @lease_*} user variables. */
  SESSION_USER_VARIABLES,
  /**
   * Claim, renew, release and verify run in the multi-statement lease session (isolation, bounds,
   * commit, restore) instead of one statement each.
   */
  STEP_IN_SESSION,
  /** A manager renews each lease with a statement of its own instead of one batch for all. */
  RENEW_ONE_BY_ONE,
  /** A release of several leases (close, a group's drain) sends a statement per lease. */
  RELEASE_ONE_BY_ONE,
  /**
   * PostgreSQL's transfer is a plain UPDATE without the {@code FOR UPDATE} of the claim: it does
   * not wait for the old holder's strict-verified transactions ({@code FOR KEY SHARE}).
   */
  TRANSFER_WITHOUT_FOR_UPDATE,
  /**
   * MySQL/MariaDB statements over a list of names (batched renewal, release and transfer, a group's
   * claim and adoption) leave the index to the optimizer, which scans and locks the whole table
   * once the list is long.
   */
  BATCH_SCANS_TABLE
}
