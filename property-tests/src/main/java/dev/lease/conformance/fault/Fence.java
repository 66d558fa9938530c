package dev.lease.conformance.fault;

import dev.lease.conformance.WeakenedFences;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * How a holder's business transactions are fenced: the property's STRICT, or a negative control.
 */
public enum Fence {
  /** lease-jdbc's default: the verify takes the lock the next claim waits for. */
  STRICT,
  /** The plain verify, no lock: safe only while transactions are short (a negative control). */
  VERIFY,
  /** No fence at all: the application's DataSource unwrapped (a negative control). */
  NONE;

  /**
   * {@code ds} fenced this way; {@code idleInTransaction} bounds how long a paused holder's open
   * STRICT transaction may keep the lease row on the servers.
   */
  DataSource wrap(DataSource ds, Duration idleInTransaction) {
    return switch (this) {
      case STRICT ->
          FencedDataSource.wrap(
              ds,
              FencingOptions.builder()
                  .mode(FencingMode.STRICT)
                  .idleInTransactionTimeout(idleInTransaction)
                  .build());
      case VERIFY -> FencedDataSource.wrap(ds, previousRefusal(FencingMode.VERIFY));
      case NONE -> ds;
    };
  }

  /**
   * VERIFY with lease-jdbc's refusal before issue 25 ({@link WeakenedFences#PREVIOUS_REFUSAL}): the
   * current commit proof refuses a stale VERIFY commit on PostgreSQL by itself, and this control
   * must show the lock's absence.
   */
  static FencingOptions previousRefusal(FencingMode mode) {
    return WeakenedFences.weaken(
            FencingOptions.builder().mode(mode), WeakenedFences.PREVIOUS_REFUSAL)
        .build();
  }
}
