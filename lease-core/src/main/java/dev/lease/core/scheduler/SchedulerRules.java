package dev.lease.core.scheduler;

/**
 * The rules of a {@link LeaseScheduler} that the negative controls of the tests break one at a
 * time: which instants a poll may claim, how often a round cut short runs again, what a finish
 * records, when a round's finish is recorded without its lease, what an interrupted poll thread
 * does. The default methods are the rules; production runs {@link #PRODUCTION}.
 *
 * <p>A weakened implementation (the control of one mechanism) lives in this package's test sources
 * only, never in the jar, and reaches a scheduler through the package-private {@code
 * Builder.rulesForTesting}. Production code asks a rule here and branches on no test switch.
 */
interface SchedulerRules {

  /** The rules every production scheduler runs. */
  SchedulerRules PRODUCTION = new SchedulerRules() {};

  /**
   * Whether a poll claims only instants later than the last one on record (the row's slot): an
   * instant that already ran never runs again, whatever a replica's clock says.
   */
  default boolean claimsOnlyAfterLastInstant() {
    return true;
  }

  /** Whether the unfinished instant of a round cut short is claimed again at most once. */
  default boolean rerunsOnce() {
    return true;
  }

  /**
   * The instant a finish records as the job's last: the last instant the round overran (read by the
   * database clock in the finish's own session), so no replica runs those late, else the round's
   * own.
   *
   * @param instantMs the round's instant
   * @param overrunMs the last instant the round overran, or null if none
   */
  default long finishRecords(long instantMs, Long overrunMs) {
    return overrunMs != null ? overrunMs : instantMs;
  }

  /**
   * Whether a round whose work returned but whose lease ended meanwhile (lost after the work, or
   * released by a close) still records its finish, where the row is still its claim.
   */
  default boolean finishesWithoutLease() {
    return true;
  }

  /**
   * The poll thread was interrupted in its wait: returns whether it keeps polling. The rule: it
   * stops (the scheduler closes).
   */
  default boolean pollInterrupted() {
    return false;
  }
}
