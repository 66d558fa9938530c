package dev.lease.conformance.fault;

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
      case VERIFY ->
          FencedDataSource.wrap(ds, FencingOptions.builder().mode(FencingMode.VERIFY).build());
      case NONE -> ds;
    };
  }
}
