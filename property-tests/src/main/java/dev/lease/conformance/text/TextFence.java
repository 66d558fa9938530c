package dev.lease.conformance.text;

import dev.lease.conformance.WeakenedFences;
import dev.lease.jdbc.FencedDataSource;
import dev.lease.jdbc.FencingMode;
import dev.lease.jdbc.FencingOptions;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * How the SQL-text properties fence the scripts: lease-jdbc's STRICT fence, or a negative control.
 */
public enum TextFence {
  /** lease-jdbc's default fence. */
  STRICT,
  /**
   * The fence as its first release read SQL text: by the leading keyword only (lease-jdbc's own
   * weakening for negative controls, {@link WeakenedFences#LEADING_KEYWORD}).
   */
  LEADING_KEYWORD,
  /** The plain verify: no lock orders the claim after the holder's commit (servers). */
  VERIFY,
  /**
   * STRICT, but handing out the driver's arrays, LOBs and {@code getObject} values unwrapped, as
   * lease-jdbc did before issue 25 (its weakening {@code RAW_DRIVER_OBJECTS}).
   */
  RAW_DRIVER_OBJECTS,
  /**
   * STRICT as it was before issue 35: it trusts the session it guards (lease-jdbc's weakening
   * {@code TRUSTS_THE_SESSION}).
   */
  TRUSTS_THE_SESSION,
  /** No fence at all. */
  NONE;

  DataSource wrap(DataSource ds, Duration idleInTransaction) {
    switch (this) {
      case NONE:
        return ds;
      case VERIFY:
        // with the refusal before issue 25: the commit proof alone refuses a stale VERIFY commit
        // on PostgreSQL now, and this control shows what the missing lock lets through
        return FencedDataSource.wrap(
            ds,
            WeakenedFences.weaken(
                    FencingOptions.builder().mode(FencingMode.VERIFY),
                    WeakenedFences.PREVIOUS_REFUSAL)
                .build());
      case LEADING_KEYWORD:
      case RAW_DRIVER_OBJECTS:
        // the first release's reading, or raw driver objects, each with the refusal before issue
        // 25 (the server's refusal and the commit proof would otherwise catch much of what the
        // weakened part lets through)
        return FencedDataSource.wrap(
            ds,
            WeakenedFences.weaken(
                    FencingOptions.builder().idleInTransactionTimeout(idleInTransaction),
                    WeakenedFences.valueOf(name()),
                    WeakenedFences.PREVIOUS_REFUSAL)
                .build());
      case TRUSTS_THE_SESSION:
        return FencedDataSource.wrap(
            ds,
            WeakenedFences.weaken(
                    FencingOptions.builder().idleInTransactionTimeout(idleInTransaction),
                    WeakenedFences.TRUSTS_THE_SESSION)
                .build());
      case STRICT:
      default:
        return FencedDataSource.wrap(
            ds,
            FencingOptions.builder()
                .mode(FencingMode.STRICT)
                .idleInTransactionTimeout(idleInTransaction)
                .build());
    }
  }
}
