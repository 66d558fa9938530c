package dev.lease.core.scheduler;

/**
 * A {@link LeaseScheduler}'s {@link SchedulerRules} broken on purpose, one mechanism per constant,
 * for the negative controls of the tests; never in the jar. Applied with {@link #applyTo} (the
 * builder's package-private {@code rulesForTesting}).
 */
enum WeakenedScheduler implements SchedulerRules {
  /** Claims the latest due instant even if it is not later than the last on record. */
  IGNORE_LAST_INSTANT {
    @Override
    public boolean claimsOnlyAfterLastInstant() {
      return false;
    }
  },
  /** Claims an unfinished instant again however often it was cut short. */
  UNLIMITED_RERUNS {
    @Override
    public boolean rerunsOnce() {
      return false;
    }
  },
  /** Finishes without taking along the instants the round overran. */
  NO_OVERRUN_RECORD {
    @Override
    public long finishRecords(long instantMs, Long overrunMs) {
      return instantMs;
    }
  },
  /** Records no finish when the round's lease ended after its work returned. */
  NO_FINISH_WITHOUT_LEASE {
    @Override
    public boolean finishesWithoutLease() {
      return false;
    }
  },
  /** The poll thread keeps polling after an interrupt, with the interrupt still set. */
  POLL_KEEPS_INTERRUPT {
    @Override
    public boolean pollInterrupted() {
      Thread.currentThread().interrupt(); // the bug: every later wait returns at once
      return true;
    }
  };

  /** Builds {@code builder}'s scheduler with these rules. */
  LeaseScheduler.Builder applyTo(LeaseScheduler.Builder builder) {
    return builder.rulesForTesting(this);
  }
}
