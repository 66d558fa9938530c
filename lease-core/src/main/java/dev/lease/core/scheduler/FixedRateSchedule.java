package dev.lease.core.scheduler;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/** {@link Schedule#fixedRate}: anchor + k × period for k ≥ 0, computed rather than iterated. */
final class FixedRateSchedule implements Schedule {

  private final long periodMs;
  private final long anchorMs;

  FixedRateSchedule(Duration period, Instant anchor) {
    Objects.requireNonNull(period, "period");
    Objects.requireNonNull(anchor, "anchor");
    if (period.isNegative() || period.toMillis() < 1) {
      throw new IllegalArgumentException(
          "a fixed-rate period must be at least 1 ms, got "
              + period
              + "; instants are kept in milliseconds on the database clock");
    }
    this.periodMs = period.toMillis();
    this.anchorMs = anchor.toEpochMilli();
  }

  @Override
  public Optional<Instant> nextAfter(Instant after) {
    return Optional.of(Instant.ofEpochMilli(nextAfterMs(after.toEpochMilli())));
  }

  long periodMs() {
    return periodMs;
  }

  long nextAfterMs(long afterMs) {
    if (afterMs < anchorMs) {
      return anchorMs;
    }
    return anchorMs + ((afterMs - anchorMs) / periodMs + 1) * periodMs;
  }

  /** The latest instant in (afterMs, nowMs], or null: one division, however long the gap. */
  Long latestIn(long afterMs, long nowMs) {
    if (nowMs < anchorMs) {
      return null;
    }
    long latest = anchorMs + ((nowMs - anchorMs) / periodMs) * periodMs;
    return latest > afterMs ? latest : null;
  }

  @Override
  public String toString() {
    return "every " + periodMs + " ms from " + Instant.ofEpochMilli(anchorMs);
  }
}
