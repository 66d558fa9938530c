package dev.lease.core;

import java.time.Duration;
import java.time.Instant;

/**
 * What the database says about one lease name now ({@link LeaseManager#describe(String)}), all
 * times by the database clock, read in one statement: for operators and health checks. The holder
 * token is not shown; {@code instance} names the process that claimed it last.
 *
 * @param name the lease name
 * @param instance the instance (process) that claimed it last; empty if it was never claimed
 * @param term the fencing token of the last claim
 * @param expiresAt when the last claim expires (or expired); the epoch when released or never
 *     claimed
 * @param databaseTime the database clock when it was read
 */
public record LeaseInfo(
    String name, String instance, long term, Instant expiresAt, Instant databaseTime) {

  /** True if the last claim has not expired by the database clock: someone holds it. */
  public boolean isHeld() {
    return expiresAt.isAfter(databaseTime);
  }

  /** How long until the database lets anyone claim it; zero if it is free now. */
  public Duration remaining() {
    return isHeld() ? Duration.between(databaseTime, expiresAt) : Duration.ZERO;
  }
}
