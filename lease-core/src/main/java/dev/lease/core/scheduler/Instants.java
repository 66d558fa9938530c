package dev.lease.core.scheduler;

import java.time.Instant;
import java.util.Optional;
import java.util.function.LongConsumer;

/** A {@link Schedule} read in UTC epoch milliseconds, as the slot columns hold instants. */
final class Instants {

  private final Schedule schedule;

  Instants(Schedule schedule) {
    this.schedule = schedule;
  }

  /** The first instant strictly after {@code afterMs}, or null if the schedule has none. */
  Long nextAfter(long afterMs) {
    if (schedule instanceof FixedRateSchedule f) {
      return f.nextAfterMs(afterMs);
    }
    Optional<Instant> next = schedule.nextAfter(Instant.ofEpochMilli(afterMs));
    if (next == null || next.isEmpty()) {
      return null;
    }
    long ms = next.get().toEpochMilli();
    if (ms <= afterMs) {
      throw new IllegalStateException(
          "schedule "
              + schedule
              + " returned "
              + next.get()
              + " as the next instant after "
              + Instant.ofEpochMilli(afterMs)
              + "; a schedule must return a later instant (at millisecond precision)");
    }
    return ms;
  }

  /** The latest instant in ({@code afterMs}, {@code nowMs}], or null if there is none. */
  Long latestIn(long afterMs, long nowMs) {
    if (schedule instanceof FixedRateSchedule f) {
      return f.latestIn(afterMs, nowMs);
    }
    Long latest = null;
    for (Long s = nextAfter(afterMs); s != null && s <= nowMs; s = nextAfter(s)) {
      latest = s;
    }
    return latest;
  }

  /**
   * Calls {@code each} with the instants in ({@code afterMs}, {@code beforeMs}) in order, at most
   * {@code limit} of them; returns how many there were beyond the limit.
   */
  long between(long afterMs, long beforeMs, int limit, LongConsumer each) {
    int n = 0;
    for (Long s = nextAfter(afterMs); s != null && s < beforeMs; s = nextAfter(s)) {
      if (n == limit) {
        return count(s, beforeMs);
      }
      each.accept(s);
      n++;
    }
    return 0;
  }

  /** How many instants lie in [{@code fromMs}, {@code beforeMs}), {@code fromMs} being one. */
  private long count(long fromMs, long beforeMs) {
    if (schedule instanceof FixedRateSchedule f) {
      return (beforeMs - 1 - fromMs) / f.periodMs() + 1; // no iteration over a long outage
    }
    long n = 0;
    for (Long s = fromMs; s != null && s < beforeMs; s = nextAfter(s)) {
      n++;
    }
    return n;
  }
}
