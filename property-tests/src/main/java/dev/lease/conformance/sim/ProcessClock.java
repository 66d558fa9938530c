package dev.lease.conformance.sim;

import dev.lease.core.internal.MonotonicClock;
import java.util.function.LongSupplier;

/**
 * A simulated process's clock: it runs at its own rate against the simulation's true time (drift),
 * from its own origin (skew). A monotonic clock only ever jumps forward; {@link #jump} with a
 * negative amount is what a wall clock does under an NTP step, and is only allowed when {@link
 * #allowsBackwardJumps()} (the negative control of a keeper timed with the wall clock).
 */
public class ProcessClock implements MonotonicClock {

  private final LongSupplier trueTime;
  private long anchorTrue;
  private long anchorLocal;
  private double rate;

  /**
   * @param trueTime the simulation's true time in nanoseconds
   * @param origin this clock's reading now (its skew against other processes)
   * @param rate how fast it runs against true time (1.0 exact, 0.9 ten percent slow)
   */
  protected ProcessClock(LongSupplier trueTime, long origin, double rate) {
    this.trueTime = trueTime;
    this.anchorTrue = trueTime.getAsLong();
    this.anchorLocal = origin;
    this.rate = rate;
  }

  @Override
  public long nanoTime() {
    return anchorLocal + (long) ((trueTime.getAsLong() - anchorTrue) * rate);
  }

  public double rate() {
    return rate;
  }

  /** Changes the rate from now on (drift). */
  public void rate(double newRate) {
    anchorLocal = nanoTime();
    anchorTrue = trueTime.getAsLong();
    rate = newRate;
  }

  /** Steps the clock; a monotonic clock ignores backward steps. */
  public void jump(long nanos) {
    if (nanos < 0 && !allowsBackwardJumps()) {
      return;
    }
    anchorLocal += nanos;
  }

  /** True only for a wall clock, which NTP may step backwards. */
  public boolean allowsBackwardJumps() {
    return false;
  }

  /** True nanoseconds until this clock has advanced by {@code localNanos}. */
  long toTrue(long localNanos) {
    return (long) Math.ceil(localNanos / rate);
  }
}
