package dev.lease.core.scheduler;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * When a job's rounds are due: a strictly increasing sequence of instants on the database's clock.
 * {@link LeaseScheduler} asks it for the instants after the last one on record and runs the latest
 * one that the database clock has reached, once across all replicas.
 *
 * <p>Implement it for your own schedules, for example a cron expression:
 *
 * <pre>{@code
 * Schedule nightly = after -> cron.nextExecution(after.atZone(ZoneOffset.UTC)).map(ZonedDateTime::toInstant);
 * }</pre>
 *
 * <p>Instants are used with millisecond precision (finer parts are dropped). An implementation must
 * be a pure function of its argument (every replica must compute the same instants) and must be
 * thread-safe.
 */
@FunctionalInterface
public interface Schedule {

  /**
   * The first instant of this schedule strictly after {@code after}, or empty if there is none (the
   * job then never runs again).
   */
  Optional<Instant> nextAfter(Instant after);

  /**
   * The instants {@code anchor}, {@code anchor + period}, {@code anchor + 2 × period}, ...: a fixed
   * rate whose phase is pinned by the anchor, so every replica computes the same instants whenever
   * it started. Nothing runs before the anchor.
   *
   * @param period at least 1 ms
   * @param anchor the first instant
   * @throws IllegalArgumentException if the period is shorter than 1 ms
   */
  static Schedule fixedRate(Duration period, Instant anchor) {
    return new FixedRateSchedule(period, anchor);
  }
}
