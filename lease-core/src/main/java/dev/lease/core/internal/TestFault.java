package dev.lease.core.internal;

/**
 * Deliberately broken variants of the dialects' SQL, for the negative controls of the tests: each
 * one restores a bug the tests must catch. Set with {@link LeaseInternals#faultForTesting}; never
 * in production. The lifecycle's controls are weakened {@link LifecycleRules} in test sources.
 *
 * <p>Not API: it may change in any release.
 */
public enum TestFault {
  /** A new lease row starts at term 0 (terms repeat after the row is deleted). */
  TERM_FROM_ZERO,
  /** A failed session restore after a failed attempt replaces the attempt's own error. */
  RESTORE_HIDES_ERROR,
  /** MySQL/MariaDB sessions keep the saved settings in {@code @lease_*} user variables. */
  SESSION_USER_VARIABLES,
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
