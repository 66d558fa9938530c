package dev.lease.core;

import java.time.Duration;
import java.util.Objects;

/**
 * The timings of a lease, immutable and validated when built.
 *
 * <p>How they relate (defaults in brackets): the database lets another process claim a lease {@code
 * leaseDuration} [15 s] after the start of its last successful claim or renewal, judged by the
 * database's own clock. The holder renews every {@code renewInterval} [2 s], retrying a failed
 * renewal at the same cadence, each attempt bounded by {@code attemptTimeout} [5 s]. The holder
 * gives the lease up itself {@code localDeadline} [10 s] after the start of its last successful
 * renewal, measured with its own monotonic clock; the gap to {@code leaseDuration} absorbs a
 * process clock that runs slow by up to {@code maxClockRateError} [10 %]. After a loss, work under
 * the lease has {@code gracePeriod} [5 s] to stop before the failure policy runs.
 *
 * <p>Validated relations: {@code renewInterval < localDeadline}, {@code attemptTimeout <
 * localDeadline}, {@code localDeadline < leaseDuration × (1 − maxClockRateError)}.
 */
public final class LeaseTimings {

  /**
   * The defaults: lease 15 s, renew every 2 s, attempt timeout 5 s, local deadline 10 s, grace 5 s.
   */
  public static final LeaseTimings DEFAULTS = builder().build();

  private final Duration leaseDuration;
  private final Duration renewInterval;
  private final Duration attemptTimeout;
  private final Duration localDeadline;
  private final Duration gracePeriod;
  private final double maxClockRateError;

  private LeaseTimings(Builder b) {
    this.leaseDuration = b.leaseDuration;
    this.renewInterval = b.renewInterval;
    this.attemptTimeout = b.attemptTimeout;
    this.localDeadline = b.localDeadline;
    this.gracePeriod = b.gracePeriod;
    this.maxClockRateError = b.maxClockRateError;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Timings for a lease of {@code leaseDuration}, the others derived in the proportions of the
   * defaults (15 s lease: renew every 2 s, attempt timeout 5 s, local deadline 10 s, grace 5 s):
   * renew interval = lease × 2/15, attempt timeout = lease / 3, local deadline = lease × 2/3, grace
   * period = lease / 3, in whole milliseconds rounded down. The agent's {@code lease-duration=} and
   * the Spring starter's {@code lease.duration} derive the timings they are not given the same way.
   *
   * @throws IllegalArgumentException if the lease is too short for positive derived timings (under
   *     8 ms)
   */
  public static LeaseTimings of(Duration leaseDuration) {
    return builderFor(leaseDuration).build();
  }

  /**
   * A builder whose timings derive from {@code leaseDuration} as in {@link #of(Duration)}; set any
   * of them to override it. The relations are checked by {@link Builder#build()}, not here, so an
   * override can repair a derived value that alone would be rejected.
   */
  public static Builder builderFor(Duration leaseDuration) {
    Objects.requireNonNull(leaseDuration, "leaseDuration");
    long ms = leaseDuration.toMillis();
    return new Builder()
        .leaseDuration(leaseDuration)
        .renewInterval(Duration.ofMillis(ms * 2 / 15))
        .attemptTimeout(Duration.ofMillis(ms / 3))
        .localDeadline(Duration.ofMillis(ms * 2 / 3))
        .gracePeriod(Duration.ofMillis(ms / 3));
  }

  /** A builder that starts from these timings. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.leaseDuration = leaseDuration;
    b.renewInterval = renewInterval;
    b.attemptTimeout = attemptTimeout;
    b.localDeadline = localDeadline;
    b.gracePeriod = gracePeriod;
    b.maxClockRateError = maxClockRateError;
    return b;
  }

  public Duration leaseDuration() {
    return leaseDuration;
  }

  public Duration renewInterval() {
    return renewInterval;
  }

  public Duration attemptTimeout() {
    return attemptTimeout;
  }

  public Duration localDeadline() {
    return localDeadline;
  }

  public Duration gracePeriod() {
    return gracePeriod;
  }

  public double maxClockRateError() {
    return maxClockRateError;
  }

  @Override
  public String toString() {
    return "LeaseTimings[lease="
        + leaseDuration.toMillis()
        + "ms, renewInterval="
        + renewInterval.toMillis()
        + "ms, attemptTimeout="
        + attemptTimeout.toMillis()
        + "ms, localDeadline="
        + localDeadline.toMillis()
        + "ms, grace="
        + gracePeriod.toMillis()
        + "ms, maxClockRateError="
        + maxClockRateError
        + "]";
  }

  /**
   * Builds {@link LeaseTimings}; {@link #build()} checks every relation and names the broken one.
   */
  public static final class Builder {
    private Duration leaseDuration = Duration.ofSeconds(15);
    private Duration renewInterval = Duration.ofSeconds(2);
    private Duration attemptTimeout = Duration.ofSeconds(5);
    private Duration localDeadline = Duration.ofSeconds(10);
    private Duration gracePeriod = Duration.ofSeconds(5);
    private double maxClockRateError = 0.10;

    private Builder() {}

    public Builder leaseDuration(Duration d) {
      this.leaseDuration = Objects.requireNonNull(d, "leaseDuration");
      return this;
    }

    public Builder renewInterval(Duration d) {
      this.renewInterval = Objects.requireNonNull(d, "renewInterval");
      return this;
    }

    public Builder attemptTimeout(Duration d) {
      this.attemptTimeout = Objects.requireNonNull(d, "attemptTimeout");
      return this;
    }

    public Builder localDeadline(Duration d) {
      this.localDeadline = Objects.requireNonNull(d, "localDeadline");
      return this;
    }

    public Builder gracePeriod(Duration d) {
      this.gracePeriod = Objects.requireNonNull(d, "gracePeriod");
      return this;
    }

    /** The largest relative rate error of a process's monotonic clock, in [0, 0.5). */
    public Builder maxClockRateError(double rate) {
      this.maxClockRateError = rate;
      return this;
    }

    /**
     * Builds the timings.
     *
     * @throws IllegalArgumentException naming the broken relation and how to fix it
     */
    public LeaseTimings build() {
      positive("leaseDuration", leaseDuration);
      positive("renewInterval", renewInterval);
      positive("attemptTimeout", attemptTimeout);
      positive("localDeadline", localDeadline);
      if (gracePeriod.isNegative()) {
        throw new IllegalArgumentException(
            "gracePeriod must not be negative, got " + gracePeriod.toMillis() + " ms");
      }
      if (!(maxClockRateError >= 0 && maxClockRateError < 0.5)) {
        throw new IllegalArgumentException(
            "maxClockRateError must be in [0, 0.5), got " + maxClockRateError);
      }
      if (renewInterval.compareTo(localDeadline) >= 0) {
        throw new IllegalArgumentException(
            "renewInterval ("
                + renewInterval.toMillis()
                + " ms) must be shorter than localDeadline ("
                + localDeadline.toMillis()
                + " ms): the holder must get at least one renewal attempt before it gives the lease up");
      }
      if (attemptTimeout.compareTo(localDeadline) >= 0) {
        throw new IllegalArgumentException(
            "attemptTimeout ("
                + attemptTimeout.toMillis()
                + " ms) must be shorter than localDeadline ("
                + localDeadline.toMillis()
                + " ms): a renewal that may take longer than the deadline can never keep the lease");
      }
      double slowest = leaseDuration.toNanos() * (1.0 - maxClockRateError);
      if (localDeadline.toNanos() >= slowest) {
        throw new IllegalArgumentException(
            "localDeadline ("
                + localDeadline.toMillis()
                + " ms) must be shorter than leaseDuration × (1 − maxClockRateError) = "
                + (long) (slowest / 1_000_000)
                + " ms, so the holder gives the lease up before the"
                + " database lets anyone else claim it even when its clock runs slow; shorten"
                + " localDeadline or lengthen leaseDuration");
      }
      return new LeaseTimings(this);
    }

    private static void positive(String what, Duration d) {
      if (d.isZero() || d.isNegative()) {
        throw new IllegalArgumentException(what + " must be positive, got " + d.toMillis() + " ms");
      }
      if (d.toMillis() > Integer.MAX_VALUE) {
        throw new IllegalArgumentException(
            what + " must be at most " + Integer.MAX_VALUE + " ms, got " + d.toMillis() + " ms");
      }
    }
  }
}
