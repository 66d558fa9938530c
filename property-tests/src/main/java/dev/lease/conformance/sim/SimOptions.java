package dev.lease.conformance.sim;

import dev.lease.conformance.Mutation;
import dev.lease.core.LeaseTimings;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * What a simulation runs: the lease timings, how far process clocks may drift, and what is
 * deliberately broken for a negative control (a clock beyond the bound, a keeper on the wall clock,
 * a {@link Mutation} of lease-core's or lease-jdbc's statements and calls).
 */
public final class SimOptions {

  /** Makes the clock of a simulated process. */
  @FunctionalInterface
  public interface ClockFactory {
    ProcessClock create(LongSupplier trueNanos, long origin, double rate);
  }

  /**
   * Timings of the simulation: tight on purpose (local deadline 890 ms against 1000 ms × 0.9), so
   * that a clock running slower than the bound allows really does break invariant 2.
   */
  public static final LeaseTimings TIMINGS =
      LeaseTimings.builder()
          .leaseDuration(Duration.ofMillis(1000))
          .renewInterval(Duration.ofMillis(200))
          .attemptTimeout(Duration.ofMillis(150))
          .localDeadline(Duration.ofMillis(890))
          .gracePeriod(Duration.ofMillis(100))
          .maxClockRateError(0.10)
          .build();

  final LeaseTimings timings;
  final double slowest;
  final double fastest;
  final ClockFactory clocks;
  final Set<Mutation> mutations;

  private SimOptions(
      LeaseTimings timings,
      double slowest,
      double fastest,
      ClockFactory clocks,
      Set<Mutation> mutations) {
    this.timings = timings;
    this.slowest = slowest;
    this.fastest = fastest;
    this.clocks = clocks;
    this.mutations = mutations;
  }

  /**
   * The protocol's promise: clocks run slow by at most the configured bound; running fast is always
   * safe (the holder only gives up earlier), so fast clocks go up to 50 % beyond it.
   */
  public static SimOptions standard() {
    return new SimOptions(
        TIMINGS,
        1 - TIMINGS.maxClockRateError(),
        1.5,
        (t, origin, rate) -> new ProcessClock(t, origin, rate),
        Set.of());
  }

  /** Clocks that may run slower than the bound (a negative control: invariant 2 must break). */
  public SimOptions slowestClockRate(double rate) {
    return new SimOptions(timings, rate, fastest, clocks, mutations);
  }

  public SimOptions clocks(ClockFactory factory) {
    return new SimOptions(timings, slowest, fastest, factory, mutations);
  }

  /** lease-core or lease-jdbc broken by {@code m} (a negative control). */
  public SimOptions mutation(Mutation m) {
    Set<Mutation> more =
        mutations.isEmpty() ? EnumSet.noneOf(Mutation.class) : EnumSet.copyOf(mutations);
    more.add(m);
    return new SimOptions(timings, slowest, fastest, clocks, more);
  }
}
