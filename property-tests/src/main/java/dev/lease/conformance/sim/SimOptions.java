package dev.lease.conformance.sim;

import dev.lease.core.LeaseTimings;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * What a simulation runs: the lease timings, how far process clocks may drift, and the extension
 * points through which test code plugs in deliberately broken participants (negative controls).
 */
public final class SimOptions {

  /** Makes the clock of a simulated process. */
  @FunctionalInterface
  public interface ClockFactory {
    ProcessClock create(LongSupplier trueNanos, long origin, double rate);
  }

  /**
   * A participant that writes to the lease table behind the protocol's back (negative controls).
   */
  @FunctionalInterface
  public interface Intruder {
    void act(Connection connection, String table, String name, long leaseMs) throws SQLException;
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
  final Intruder intruder;

  private SimOptions(
      LeaseTimings timings,
      double slowest,
      double fastest,
      ClockFactory clocks,
      Intruder intruder) {
    this.timings = timings;
    this.slowest = slowest;
    this.fastest = fastest;
    this.clocks = clocks;
    this.intruder = intruder;
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
        null);
  }

  /** Clocks that may run slower than the bound (a negative control: invariant 2 must break). */
  public SimOptions slowestClockRate(double rate) {
    return new SimOptions(timings, rate, fastest, clocks, intruder);
  }

  public SimOptions clocks(ClockFactory factory) {
    return new SimOptions(timings, slowest, fastest, factory, intruder);
  }

  public SimOptions intruder(Intruder intruder) {
    return new SimOptions(timings, slowest, fastest, clocks, intruder);
  }
}
